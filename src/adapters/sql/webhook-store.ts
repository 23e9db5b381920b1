import type { Kysely } from 'kysely';
import type { Database } from './schema.js';
import type { DueWebhook, WebhookStore } from '../../ports/webhooks.js';

/** Webhook deliveries in the task database (SQLite or Postgres). */
export class SqlWebhookStore implements WebhookStore {
  constructor(private readonly db: Kysely<Database>) {}

  async due(now: number, limit: number, skipAccounts: readonly string[] = []): Promise<DueWebhook[]> {
    const rows = await this.db
      .selectFrom('webhooks')
      .innerJoin('tasks', 'tasks.id', 'webhooks.task_id')
      .select(['webhooks.task_id', 'webhooks.url', 'webhooks.attempts', 'webhooks.next_at', 'tasks.account_id'])
      .where('webhooks.state', '=', 'pending')
      .where('webhooks.next_at', '<=', now)
      .where('tasks.state', 'in', ['success', 'failed'])
      .$if(skipAccounts.length > 0, (q) => q.where('tasks.account_id', 'not in', skipAccounts))
      .orderBy('webhooks.next_at')
      .limit(limit)
      .execute();
    return rows.map((r) => ({ taskId: r.task_id, accountId: r.account_id, url: r.url, attempts: Number(r.attempts), nextAt: Number(r.next_at) }));
  }

  async claim(hook: DueWebhook, leaseUntil: number): Promise<boolean> {
    // Compare-and-set on next_at: of two dispatchers that read the same row, one update matches.
    const res = await this.db
      .updateTable('webhooks')
      .set({ next_at: leaseUntil })
      .where('task_id', '=', hook.taskId)
      .where('state', '=', 'pending')
      .where('next_at', '=', hook.nextAt)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  async delivered(taskId: string, attempts: number, now: number): Promise<void> {
    await this.db.updateTable('webhooks').set({ state: 'delivered', attempts, last_error: null, updated_at: now }).where('task_id', '=', taskId).execute();
  }

  async failedAttempt(taskId: string, attempts: number, error: string, nextAt: number | null, now: number): Promise<void> {
    await this.db
      .updateTable('webhooks')
      .set({ state: nextAt === null ? 'failed' : 'pending', attempts, last_error: error.slice(0, 500), next_at: nextAt ?? now, updated_at: now })
      .where('task_id', '=', taskId)
      .execute();
  }

  async get(taskId: string): Promise<{ url: string; state: string; attempts: number; lastError: string | null } | null> {
    const row = await this.db.selectFrom('webhooks').selectAll().where('task_id', '=', taskId).executeTakeFirst();
    return row ? { url: row.url, state: row.state, attempts: Number(row.attempts), lastError: row.last_error } : null;
  }
}
