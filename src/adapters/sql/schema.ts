import type { Generated } from 'kysely';

/** Table shapes shared by the SQLite and Postgres adapters. Times are epoch milliseconds. */
export interface Database {
  /** held: the sum of the holds of the account's unfinished tasks, kept by triggers (migration 0004_holds). */
  accounts: { id: string; status: string; balance: number; created_at: number; held: Generated<number> };
  api_keys: {
    id: string;
    account_id: string;
    hash: string;
    prefix: string;
    enabled: number;
    rate_limit: number | null;
    concurrency: number | null;
    created_at: number;
  };
  tasks: {
    id: string;
    kind: string;
    account_id: string;
    api_key_id: string;
    state: string;
    params: string;
    result: string | null;
    error: string | null;
    engine: string | null;
    progress: number;
    charged: number | null;
    created_at: number;
    updated_at: number;
    started_at: number | null;
    finished_at: number | null;
    expires_at: number;
    /** Credits held while unfinished (NewTask.hold, TaskStore.reserve); 0 once known to hold nothing. */
    hold: number;
  };
  /**
   * Each key's count of unfinished (queued or running) tasks, kept exact by triggers on tasks (migration
   * 0003_key_unfinished): written by the database only, read by a create's limit check.
   */
  key_unfinished: { api_key_id: string; n: number };
  /** A task's callback_url and its delivery (docs/api.md "Webhooks"); one row per task that asked for one. */
  webhooks: {
    task_id: string;
    url: string;
    /** pending (waiting for the task's end, or for its next attempt), delivered, failed (gave up). */
    state: string;
    attempts: number;
    /** When the next attempt may start; also a claim's lease while one runs. */
    next_at: number;
    last_error: string | null;
    created_at: number;
    updated_at: number;
  };
  ledger: {
    id: Generated<number>;
    account_id: string;
    task_id: string | null;
    amount: number;
    reason: string;
    created_at: number;
  };
  jobs: {
    seq: Generated<number>;
    task_id: string;
    kind: string;
    state: string;
    attempts: number;
    worker_id: string | null;
    lease_until: number;
    available_at: number;
    created_at: number;
  };
}
