import type { TaskKind, TaskRecord, TaskState } from '../domain/task.js';

export interface NewTask {
  id: string;
  kind: TaskKind;
  accountId: string;
  apiKeyId: string;
  params: Record<string, unknown>;
  createdAt: number;
  expiresAt: number;
}

export interface SuccessOutcome {
  result: Record<string, unknown>;
  engine: string;
  /** Full price; what is taken is capped by the balance (see pricing.amountToCharge). */
  price: number;
}

export interface TaskFilter {
  state?: TaskState;
  kind?: TaskKind;
  limit: number;
}

export interface TaskStore {
  create(task: NewTask): Promise<TaskRecord>;
  get(id: string): Promise<TaskRecord | null>;
  markRunning(id: string, now: number): Promise<void>;
  setProgress(id: string, progress: number, now: number): Promise<void>;
  /**
   * Marks success and charges the account in one transaction, once: a second call for the same
   * task changes nothing and returns false (so a retried job can never charge twice).
   */
  completeSuccess(id: string, outcome: SuccessOutcome, now: number): Promise<boolean>;
  completeFailure(id: string, error: string, now: number): Promise<boolean>;
  /** Unfinished tasks created with this key (queued or running), counted up to `atMost`. */
  countUnfinishedForKey(apiKeyId: string, atMost: number): Promise<number>;
  list(filter: TaskFilter): Promise<TaskRecord[]>;
  listExpired(now: number, limit: number): Promise<TaskRecord[]>;
  delete(id: string): Promise<void>;
  ping(): Promise<void>;
}
