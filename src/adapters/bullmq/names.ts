import type { TaskKind } from '../../domain/task.js';

/** What a BullMQ job carries; its job id is the task id, so adding the same task twice adds nothing. */
export interface JobData {
  taskId: string;
  kind: TaskKind;
}

/** One queue per kind: each has its own workers, concurrency and backlog. */
export function queueName(kind: TaskKind): string {
  return `soundry-${kind}`;
}
