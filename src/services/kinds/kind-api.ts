import type { TaskKind, TaskRecord } from '../../domain/task.js';
import type { Caller } from '../auth.js';

export interface PreparedTask {
  /** What the worker needs, stored with the task. */
  params: Record<string, unknown>;
  /** The price when it is known at create time (TTS); null when it depends on the input's duration. */
  knownPrice: number | null;
}

export interface PresentTools {
  /** A signed, expiring URL for a stored result file. */
  fileUrl(key: string): string;
  /** Queue position of a waiting task (see JobQueue.position). */
  position(taskId: string): Promise<number | null>;
}

/** The API side of one task kind: checks at create, the query's data at get. */
export interface KindApi<Body = unknown> {
  readonly kind: TaskKind;
  prepare(body: Body, caller: Caller): Promise<PreparedTask>;
  present(task: TaskRecord, tools: PresentTools): Promise<Record<string, unknown>>;
}
