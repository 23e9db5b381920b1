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
