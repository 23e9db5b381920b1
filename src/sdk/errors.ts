import type { TaskKind } from '../domain/task.js';

/**
 * Why a call failed, so a caller (and the CLI's exit codes) can tell a refusal of the API from a failed task,
 * an unreachable or silent server, a cancelled call or a file that is not there.
 */
export type SoundryErrorKind = 'api' | 'task_failed' | 'network' | 'timeout' | 'cancelled' | 'input';

/** A task a call created: it runs (and is charged) on the server whatever happens to the call afterwards. */
export interface CreatedTask {
  id: string;
  kind: TaskKind;
  /** The task had finished on the server (its result ready) when the call failed: downloading the result, or the next step. */
  finished?: boolean;
}

export interface SoundryErrorDetails {
  /** The task the failed call had created: the caller needs its id to find it (and what it was charged). */
  task?: CreatedTask | null;
  /** Set on a 'timeout' because the server sent nothing for this many seconds (the timeoutSeconds option). */
  silentSeconds?: number | null;
}

export class SoundryError extends Error {
  override readonly name = 'SoundryError';
  readonly task: CreatedTask | null;
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
    this.task = details.task ?? null;
    this.silentSeconds = details.silentSeconds ?? null;
  }

  /** The same error, naming the task it happened to (the first one named stays: it is the one that failed). */
  withTask(task: CreatedTask): SoundryError {
    if (this.task) return this;
    const copy = new SoundryError(this.message, this.kind, this.code, this.httpStatus, { task, silentSeconds: this.silentSeconds });
    copy.stack = this.stack;
    return copy;
  }
}

/** Errors thrown after `task` was created name it, so no caller loses the id of a task that runs on without it. */
export async function aboutTask<T>(task: CreatedTask, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    throw err instanceof SoundryError ? err.withTask(task) : err;
  }
}
