import type { QueriedTask, TaskKind, TaskRecord, TaskState } from '../domain/task.js';
import type { JobPayload } from './queue.js';

export interface NewTask {
  id: string;
  kind: TaskKind;
  accountId: string;
  apiKeyId: string;
  params: Record<string, unknown>;
  createdAt: number;
  expiresAt: number;
  /** Where the task's final state is POSTed (docs/api.md "Webhooks"); stored in the task's own transaction. */
  callbackUrl?: string;
  /**
   * Credits the task holds while unfinished: its price when known at create (TTS), else 0 (docs/api.md
   * "Billing"). createWithinLimit refuses the task when its account cannot cover it beside the other holds.
   */
  hold?: number;
  /**
   * Without `hold`: credits held while unfinished up to this many, as far as the account's available credits go
   * (balance less the other holds; podcast audio's minimum price). Something must be available, as for any create.
   */
  holdUpTo?: number;
}

/** An account's balance and the sum of what its unfinished tasks hold (accounts.held). */
export interface Funds {
  balance: number;
  held: number;
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

/** What createWithinLimit did: the task, or nothing because the key was at its limit. */
export type CreateWithinLimitResult =
  | { created: true; task: TaskRecord }
  | { created: false; reason: 'unfinished_limit' }
  /** Nothing left once the account's other unfinished tasks' holds are set aside, or less than this task's hold. */
  | { created: false; reason: 'insufficient_credits' };

/** What reserve did: the hold taken, or refused with the funds it saw (this task's own earlier hold not counted as held). */
export type ReserveResult = { reserved: true } | { reserved: false; funds: Funds };

/** What one API key's tasks still kept (TASK_TTL_SECONDS) amount to. */
export interface KeyUsage {
  apiKeyId: string;
  tasks: number;
  succeeded: number;
  failed: number;
  /** Credits charged for them. */
  credits: number;
}

export interface TaskStore {
  create(task: NewTask): Promise<TaskRecord>;
  /**
   * Creates the task unless its API key already has `limit` unfinished (queued or running) tasks.
   * The count and the insert are one transaction, serialized per key across processes and nodes,
   * so concurrent creates can never leave more than `limit` unfinished. In the same transaction, refused
   * (insufficient_credits) unless the account's balance less its other holds is above zero and covers `task.hold`.
   */
  createWithinLimit(task: NewTask, limit: number): Promise<CreateWithinLimitResult>;
  /**
   * Sets an unfinished task's hold to `price` once it is known (a decoded input's length), if its account's
   * balance less the other unfinished tasks' holds covers it; else changes nothing. A task asked again (a
   * retried run) replaces its own earlier hold. Finished or missing tasks are refused with empty funds.
   */
  reserve(id: string, price: number): Promise<ReserveResult>;
  get(id: string): Promise<TaskRecord | null>;
  /** The task without its params, for a query (every poll): see QueriedTask. */
  getForQuery(id: string): Promise<QueriedTask | null>;
  /** The task's params alone (null: no such task), for a query whose answer shows some of them. */
  getParams(id: string): Promise<Record<string, unknown> | null>;
  markRunning(id: string, now: number): Promise<void>;
  setProgress(id: string, progress: number, now: number): Promise<void>;
  /**
   * Marks success and charges the account in one transaction, once: a second call for the same
   * task changes nothing and returns false (so a retried job can never charge twice).
   */
  completeSuccess(id: string, outcome: SuccessOutcome, now: number): Promise<boolean>;
  completeFailure(id: string, error: string, now: number): Promise<boolean>;
  /**
   * Unfinished tasks created with this key (queued or running), counted up to `atMost`. For
   * display only: as a guard before create it races (check, then insert); use createWithinLimit.
   */
  countUnfinishedForKey(apiKeyId: string, atMost: number): Promise<number>;
  list(filter: TaskFilter): Promise<TaskRecord[]>;
  /** Tasks and charged credits per API key, over the tasks still kept (the admin page's usage). */
  usageByKey(): Promise<KeyUsage[]>;
  /** Queued or running tasks of these kinds, by id after `afterId` (paging), for the queue's recovery of lost jobs. */
  listUnfinished(kinds: readonly TaskKind[], afterId: string | null, limit: number): Promise<JobPayload[]>;
  /**
   * Tasks past their expiry that the reaper may act on, soonest first: finished ones (deleted with their files) and
   * queued ones no worker started (failed). A running task is never listed: its worker is still writing its result.
   */
  listExpired(now: number, limit: number): Promise<TaskRecord[]>;
  delete(id: string): Promise<void>;
  ping(): Promise<void>;
}
