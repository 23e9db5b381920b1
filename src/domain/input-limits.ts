import { AppError } from './errors.js';
import type { TaskKind } from './task.js';

/**
 * A kind's own limit on its input file, lower than what the server takes otherwise (ENHANCE_MAX_BYTES under
 * UPLOAD_MAX_BYTES). The worker enforces it when it fetches the input; the upload route (with `?kind=`) and the
 * kind's create enforce it earlier from the same value, so a client learns before sending or queueing hundreds of MB.
 */
export interface KindInputLimit {
  maxBytes: number;
  /** The setting that sets it, named in the refusal so the operator knows what to raise. */
  setting: string;
  /** What the user can do instead: the very words the worker's failure gives (one constant, one text). */
  hint: string;
}

/** The kinds with such a limit; a kind missing here has none beyond UPLOAD_MAX_BYTES and INPUT_MAX_BYTES. */
export type KindInputLimits = Readonly<Partial<Record<TaskKind, KindInputLimit>>>;

/** 100413 for an input over its kind's limit; `found` says what was over it (a declared length, a stored file). */
export function kindInputTooLarge(kind: TaskKind, limit: KindInputLimit, found: string): AppError {
  return new AppError('PAYLOAD_TOO_LARGE', `Payload too large: ${found}; ${kind} input files may be at most ${limit.maxBytes} bytes (${limit.setting}); ${limit.hint}`);
}
