/** A callback waiting to be sent: its task has reached success or failed, and the attempt is due. */
export interface DueWebhook {
  taskId: string;
  /** The task's account: a dispatcher gives each account a share of its deliveries at once. */
  accountId: string;
  url: string;
  attempts: number;
  /** The row's next_at when read: claiming compares it, so two dispatchers never send the same attempt. */
  nextAt: number;
}

/**
 * Callback deliveries, stored next to the tasks (the row is written with the task), so they survive
 * restarts and every worker node sees the same ones.
 */
export interface WebhookStore {
  /** Pending callbacks of finished tasks whose next attempt is due at `now`, oldest first, of accounts not in `skipAccounts`. */
  due(now: number, limit: number, skipAccounts?: readonly string[]): Promise<DueWebhook[]>;
  /**
   * Takes the attempt for this dispatcher until `leaseUntil` (another one may take it after that, if this
   * process died mid-attempt); false when another dispatcher took it first.
   */
  claim(hook: DueWebhook, leaseUntil: number): Promise<boolean>;
  delivered(taskId: string, attempts: number, now: number): Promise<void>;
  /** Another attempt at `nextAt`, or, with nextAt null, no more: the callback is given up. */
  failedAttempt(taskId: string, attempts: number, error: string, nextAt: number | null, now: number): Promise<void>;
  /** The delivery state of a task's callback (admin and tests). */
  get(taskId: string): Promise<{ url: string; state: string; attempts: number; lastError: string | null } | null>;
}

/** Sends one signed POST; resolves with the receiver's HTTP status, rejects when none came (refused address included). */
export interface WebhookSender {
  post(url: string, body: Buffer, headers: Record<string, string>, timeoutMs: number): Promise<number>;
}
