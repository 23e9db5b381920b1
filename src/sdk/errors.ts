/**
 * Why a call failed, so a caller (and the CLI's exit codes) can tell a refusal of the API from a failed task,
 * an unreachable or silent server or a file that is not there.
 */
export type SoundryErrorKind = 'api' | 'task_failed' | 'network' | 'timeout' | 'input';

export interface SoundryErrorDetails {
  /** Set on a 'timeout' because the server sent nothing for this many seconds (the timeoutSeconds option). */
  silentSeconds?: number | null;
}

export class SoundryError extends Error {
  override readonly name = 'SoundryError';
  readonly silentSeconds: number | null;
  constructor(
    message: string,
    readonly kind: SoundryErrorKind,
    /** The envelope's code when the API answered one (101002 for a bad key, 100100 for credits ...). */
    readonly code: number | null = null,
    readonly httpStatus: number | null = null,
    details: SoundryErrorDetails = {},
  ) {
    super(message);
    this.silentSeconds = details.silentSeconds ?? null;
  }
}
