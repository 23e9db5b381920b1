import type { TaskKind } from '../domain/task.js';

export interface JobPayload {
  taskId: string;
  kind: TaskKind;
}

export interface ReservedJob extends JobPayload {
  /** 1 on the first delivery; grows each time a lease expired or the job was retried. */
  attempt: number;
}

/**
 * Durable work queue with leases: a reserved job not acknowledged before its lease ends
 * (the worker died) is delivered again. SQLite and BullMQ implement it.
 */
export interface JobQueue {
  enqueue(job: JobPayload): Promise<void>;
  reserve(kinds: readonly TaskKind[], workerId: string, leaseMs: number): Promise<ReservedJob | null>;
  /** Extends the lease; false when the job is no longer this worker's. */
  heartbeat(taskId: string, workerId: string, leaseMs: number): Promise<boolean>;
  ack(taskId: string): Promise<void>;
  /** Gives the job back for another delivery (graceful shutdown, transient failure). */
  release(taskId: string, workerId: string, delayMs: number): Promise<void>;
  /** 1-based position among waiting jobs of its kind; 0 while it is being processed; null when unknown. */
  position(taskId: string): Promise<number | null>;
  depth(): Promise<Partial<Record<TaskKind, number>>>;
  close(): Promise<void>;
}
