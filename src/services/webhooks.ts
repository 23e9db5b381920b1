import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Logger } from 'pino';
import { errorSummary } from '../domain/errors.js';
import type { DueWebhook, WebhookSender, WebhookStore } from '../ports/webhooks.js';

/** The header carrying `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">` (Stripe's scheme). */
export const SIGNATURE_HEADER = 'soundry-signature';

export function signWebhook(secret: string, timestamp: number, body: string | Buffer): string {
  const mac = createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest('hex');
  return `t=${timestamp},v1=${mac}`;
}

/**
 * What a receiver does (docs/api.md "Webhooks"): recompute the HMAC over "<t>.<raw body>", compare in
 * constant time, and refuse timestamps older than `toleranceSeconds` (replays).
 */
export function verifyWebhook(secret: string, header: string, body: string | Buffer, nowSeconds: number, toleranceSeconds = 300): boolean {
  const parts = Object.fromEntries(header.split(',').map((p) => p.split('=', 2) as [string, string]));
  const t = Number(parts.t);
  if (!Number.isInteger(t) || !parts.v1 || Math.abs(nowSeconds - t) > toleranceSeconds) return false;
  const expected = Buffer.from(signWebhook(secret, t, body).split('v1=')[1]!, 'hex');
  const given = Buffer.from(parts.v1, 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

export interface WebhookPolicy {
  /** How often due callbacks are looked for. */
  pollMs: number;
  /** Wait before the second attempt; each next one waits 3x longer, at most an hour. */
  retryBaseMs: number;
  maxAttempts: number;
  timeoutMs: number;
}

export interface WebhookDeps {
  store: WebhookStore;
  sender: WebhookSender;
  /** The task's query answer exactly as task/get gives it, or null when the task is gone (expired). */
  payload(taskId: string): Promise<{ kind: string; body: unknown } | null>;
  secret: string;
  logger: Logger;
  now?: () => number;
}

const MAX_BACKOFF_MS = 3600_000;

/** Deliveries one dispatcher has under way at once. */
const MAX_IN_FLIGHT = 32;
/** Of those, one account's: its receivers' delays stay its own. */
const MAX_PER_ACCOUNT = 4;

/**
 * Sends callbacks of finished tasks, on worker nodes. Rows are written with the task and read back from
 * the database, so a callback outlives a restart and any worker node may send it; a claim (a lease on the
 * row) keeps two nodes from sending the same attempt. Runs beside the job runner: a slow receiver never
 * holds a task or a worker slot.
 *
 * Each attempt runs on its own, up to MAX_IN_FLIGHT at once and MAX_PER_ACCOUNT per account, and a pass starts
 * new ones as others end. A pass used to send a batch of 20 and wait for all of them: one account whose
 * receivers never answer (100 tasks with a hanging callback) delayed every other account's callbacks by its
 * batches' timeouts, 36 s in the test from outside, again at every retry.
 */
export class WebhookDispatcher {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;
  private readonly now: () => number;
  /** Attempts under way, by task; and how many each account has. */
  private readonly inFlight = new Map<string, Promise<void>>();
  private readonly perAccount = new Map<string, number>();

  constructor(
    private readonly deps: WebhookDeps,
    private readonly policy: WebhookPolicy,
  ) {
    this.now = deps.now ?? Date.now;
  }

  /** The last pass failed: the next failures are not logged again until one passes. */
  private failing = false;

  start(): void {
    this.stopped = false;
    this.schedule();
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.tick()
        .then(() => {
          if (this.failing) this.deps.logger.info('webhook dispatch works again');
          this.failing = false;
        })
        .catch((err: unknown) => this.dispatchFailed(err))
        .finally(() => {
          this.running = null;
          this.schedule();
        });
    }, this.policy.pollMs);
    this.timer.unref();
  }

  private dispatchFailed(err: unknown): void {
    // Once per failing streak: during a database outage this ran every pollMs (found from outside: 473 lines
    // of 2 KB in 2 minutes, each with the driver's whole client object).
    if (!this.failing) this.deps.logger.warn({ err: errorSummary(err) }, 'webhook dispatch failed; trying again quietly until it works');
    this.failing = true;
  }

  /**
   * One pass: starts the due callbacks there is room for (each bounded by timeoutMs), of accounts below their
   * share, and resolves once they are started. `settle()` waits for them to end.
   */
  async tick(): Promise<void> {
    const room = MAX_IN_FLIGHT - this.inFlight.size;
    if (room <= 0) return;
    const full = [...this.perAccount].filter(([, n]) => n >= MAX_PER_ACCOUNT).map(([account]) => account);
    for (const hook of await this.deps.store.due(this.now(), room, full)) {
      const n = this.perAccount.get(hook.accountId) ?? 0;
      // Rows of an account that reached its share in this batch wait for the next pass.
      if (n >= MAX_PER_ACCOUNT || this.inFlight.has(hook.taskId)) continue;
      this.perAccount.set(hook.accountId, n + 1);
      const run = this.attempt(hook)
        .catch((err: unknown) => this.dispatchFailed(err))
        .finally(() => {
          this.inFlight.delete(hook.taskId);
          const left = (this.perAccount.get(hook.accountId) ?? 1) - 1;
          if (left > 0) this.perAccount.set(hook.accountId, left);
          else this.perAccount.delete(hook.accountId);
        });
      this.inFlight.set(hook.taskId, run);
    }
  }

  /** Resolves once the attempts under way have ended (each is bounded by timeoutMs). */
  async settle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight.values()]);
  }

  private backoff(attempts: number): number {
    return Math.min(MAX_BACKOFF_MS, this.policy.retryBaseMs * 3 ** (attempts - 1));
  }

  private async attempt(hook: DueWebhook): Promise<void> {
    // The lease outlasts the attempt: a node that dies mid-attempt leaves the row to another after it.
    if (!(await this.deps.store.claim(hook, this.now() + this.policy.timeoutMs + 30_000))) return;
    const attempts = hook.attempts + 1;
    const payload = await this.deps.payload(hook.taskId);
    if (!payload) {
      await this.deps.store.failedAttempt(hook.taskId, attempts, 'the task expired before its callback was delivered', null, this.now());
      return;
    }
    const body = Buffer.from(JSON.stringify(payload.body));
    const timestamp = Math.floor(this.now() / 1000);
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'Soundry-Webhook/1',
      [SIGNATURE_HEADER]: signWebhook(this.deps.secret, timestamp, body),
      'soundry-task-id': hook.taskId,
      'soundry-task-kind': payload.kind,
      'soundry-delivery-attempt': String(attempts),
    };
    let error: string;
    try {
      const status = await this.deps.sender.post(hook.url, body, headers, this.policy.timeoutMs);
      if (status >= 200 && status < 300) {
        await this.deps.store.delivered(hook.taskId, attempts, this.now());
        return;
      }
      error = `the receiver answered HTTP ${status}`;
    } catch (err) {
      error = err instanceof Error ? err.message : String(err);
    }
    const nextAt = attempts >= this.policy.maxAttempts ? null : this.now() + this.backoff(attempts);
    this.deps.logger.info({ taskId: hook.taskId, attempts, error, retry: nextAt !== null }, 'webhook attempt failed');
    await this.deps.store.failedAttempt(hook.taskId, attempts, error, nextAt, this.now());
  }

  /** No new passes; waits for the one under way and the attempts it started (each bounded by timeoutMs). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
    await this.settle();
  }
}
