export const TASK_KINDS = ['separation', 'tts', 'enhance', 'podcast_script', 'podcast_audio'] as const;
export type TaskKind = (typeof TASK_KINDS)[number];

/** Internal states. The API reports queued and running both as the spec's `waiting`. */
export type TaskState = 'queued' | 'running' | 'success' | 'failed';
export type PublicStatus = 'waiting' | 'success' | 'failed';

export function publicStatus(state: TaskState): PublicStatus {
  return state === 'success' || state === 'failed' ? state : 'waiting';
}

export function isFinished(state: TaskState): boolean {
  return state === 'success' || state === 'failed';
}

export interface TaskRecord {
  id: string;
  kind: TaskKind;
  accountId: string;
  apiKeyId: string;
  state: TaskState;
  params: Record<string, unknown>;
  result: Record<string, unknown> | null;
  error: string | null;
  engine: string | null;
  progress: number;
  /** Credits charged on success (null until then). */
  charged: number | null;
  createdAt: number;
  updatedAt: number;
  startedAt: number | null;
  finishedAt: number | null;
  expiresAt: number;
}

/**
 * A task as a query presents it: everything but its params. A query answers from the task's state and result;
 * its params (a podcast episode's whole script and source, tens or hundreds of KB) were read and parsed on every
 * poll for nothing. A kind that shows something of them asks for them (PresentTools.params).
 */
export type QueriedTask = Omit<TaskRecord, 'params'>;

/**
 * A task id: a UUIDv7 (RFC 9562) written as 32 hex digits, like the random UUIDs before it. Its first 48
 * bits are the creation time in ms, so new rows land at the right edge of the id indexes (tasks and
 * jobs) instead of on a random page each: on SQLite a batch of creates then dirties a few pages, not one
 * per create per index, which halved the commit's cost (bench/results/http.md). 74 bits stay random;
 * an id alone never grants access (every query checks the caller's account).
 */
export function newTaskId(now: number, randomHex32: string): string {
  const time = Math.max(0, Math.floor(now)).toString(16).padStart(12, '0').slice(-12);
  // Version 7 in place of the random UUID's version 4; its variant bits (position 16) are kept.
  return `${time}7${randomHex32.slice(13, 32)}`;
}
