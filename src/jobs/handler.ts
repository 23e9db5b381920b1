import type { Logger } from 'pino';
import type { TaskKind, TaskRecord } from '../domain/task.js';

export interface JobContext {
  task: TaskRecord;
  attempt: number;
  /** Private scratch directory, removed after the run whatever happens. */
  tmpDir: string;
  signal: AbortSignal;
  onProgress(fraction: number): void;
  /**
   * Holds the task's price once it is known, before the costly work (docs/api.md "Billing"); throws a
   * TaskFailure naming the price and the funds when the account cannot cover it beside its other holds.
   * `what`: what the price is for, as the message says it ("61.2 s of audio").
   */
  reserve(price: number, what: string): Promise<void>;
  /** The task's log (its id and kind bound): operator detail a user's message leaves out goes here. */
  log?: Pick<Logger, 'warn'>;
}

export interface JobOutcome {
  result: Record<string, unknown>;
  /** Which engine made the result (every result says so). */
  engine: string;
  /** Full price in credits; the store caps it by the balance when charging. */
  price: number;
  /** Seconds of audio produced or processed, for the real-time-factor metric. */
  audioSeconds: number;
}

/** Worker side of one task kind. Throw TaskFailure for a final, user-facing failure. */
export interface TaskHandler {
  readonly kind: TaskKind;
  run(ctx: JobContext): Promise<JobOutcome>;
}
