import type { Kysely, Selectable } from 'kysely';
import type { Database } from './schema.js';
import type { NewTask, SuccessOutcome, TaskFilter, TaskStore } from '../../ports/task-store.js';
import type { TaskKind, TaskRecord, TaskState } from '../../domain/task.js';
import { amountToCharge } from '../../domain/pricing.js';

type TaskRow = Selectable<Database['tasks']>;

function toRecord(row: TaskRow): TaskRecord {
  return {
    id: row.id,
    kind: row.kind as TaskKind,
    accountId: row.account_id,
    apiKeyId: row.api_key_id,
    state: row.state as TaskState,
    params: JSON.parse(row.params) as Record<string, unknown>,
    result: row.result === null ? null : (JSON.parse(row.result) as Record<string, unknown>),
    error: row.error,
    engine: row.engine,
    progress: Number(row.progress),
    charged: row.charged === null ? null : Number(row.charged),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    startedAt: row.started_at === null ? null : Number(row.started_at),
    finishedAt: row.finished_at === null ? null : Number(row.finished_at),
    expiresAt: Number(row.expires_at),
  };
}

/** Task store over Kysely; works on SQLite and Postgres alike. */
export class SqlTaskStore implements TaskStore {
  constructor(private readonly db: Kysely<Database>) {}

  async create(task: NewTask): Promise<TaskRecord> {
    const row: TaskRow = {
      id: task.id,
      kind: task.kind,
      account_id: task.accountId,
      api_key_id: task.apiKeyId,
      state: 'queued',
      params: JSON.stringify(task.params),
      result: null,
      error: null,
      engine: null,
      progress: 0,
      charged: null,
      created_at: task.createdAt,
      updated_at: task.createdAt,
      started_at: null,
      finished_at: null,
      expires_at: task.expiresAt,
    };
    await this.db.insertInto('tasks').values(row).execute();
    return toRecord(row);
  }

  async get(id: string): Promise<TaskRecord | null> {
    const row = await this.db.selectFrom('tasks').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toRecord(row) : null;
  }

  async markRunning(id: string, now: number): Promise<void> {
    await this.db
      .updateTable('tasks')
      .set({ state: 'running', started_at: now, updated_at: now })
      .where('id', '=', id)
      .where('state', 'in', ['queued', 'running'])
      .execute();
  }

  async setProgress(id: string, progress: number, now: number): Promise<void> {
    await this.db
      .updateTable('tasks')
      .set({ progress: Math.max(0, Math.min(1, progress)), updated_at: now })
      .where('id', '=', id)
      .where('state', '=', 'running')
      .execute();
  }

  async completeSuccess(id: string, outcome: SuccessOutcome, now: number): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const task = await trx.selectFrom('tasks').select(['state', 'account_id']).where('id', '=', id).executeTakeFirst();
      if (!task || task.state === 'success' || task.state === 'failed') return false;
      const account = await trx
        .selectFrom('accounts')
        .select('balance')
        .where('id', '=', task.account_id)
        .executeTakeFirstOrThrow();
      const charge = amountToCharge(outcome.price, Number(account.balance));
      if (charge > 0) {
        await trx
          .updateTable('accounts')
          .set((eb) => ({ balance: eb('balance', '-', charge) }))
          .where('id', '=', task.account_id)
          .execute();
      }
      // The unique (task_id, reason) constraint is the last guard against a double charge.
      await trx
        .insertInto('ledger')
        .values({ account_id: task.account_id, task_id: id, amount: -charge, reason: 'task_charge', created_at: now })
        .execute();
      await trx
        .updateTable('tasks')
        .set({
          state: 'success',
          result: JSON.stringify(outcome.result),
          engine: outcome.engine,
          charged: charge,
          progress: 1,
          finished_at: now,
          updated_at: now,
        })
        .where('id', '=', id)
        .execute();
      return true;
    });
  }

  async completeFailure(id: string, error: string, now: number): Promise<boolean> {
    const res = await this.db
      .updateTable('tasks')
      .set({ state: 'failed', error, finished_at: now, updated_at: now })
      .where('id', '=', id)
      .where('state', 'in', ['queued', 'running'])
      .executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  async countUnfinishedForKey(apiKeyId: string, atMost: number): Promise<number> {
    // Counting stops at the limit: the caller only asks "is it reached?", and a backlog stays O(limit).
    const rows = await this.db
      .selectFrom('tasks')
      .select('id')
      .where('api_key_id', '=', apiKeyId)
      .where('state', 'in', ['queued', 'running'])
      .limit(atMost)
      .execute();
    return rows.length;
  }

  async list(filter: TaskFilter): Promise<TaskRecord[]> {
    let q = this.db.selectFrom('tasks').selectAll().orderBy('created_at', 'desc').limit(filter.limit);
    if (filter.state) q = q.where('state', '=', filter.state);
    if (filter.kind) q = q.where('kind', '=', filter.kind);
    return (await q.execute()).map(toRecord);
  }

  async listExpired(now: number, limit: number): Promise<TaskRecord[]> {
    const rows = await this.db
      .selectFrom('tasks')
      .selectAll()
      .where('expires_at', '<=', now)
      .orderBy('expires_at')
      .limit(limit)
      .execute();
    return rows.map(toRecord);
  }

  async delete(id: string): Promise<void> {
    await this.db.deleteFrom('jobs').where('task_id', '=', id).execute();
    await this.db.deleteFrom('tasks').where('id', '=', id).execute();
  }

  async ping(): Promise<void> {
    await this.db.selectFrom('tasks').select('id').limit(1).execute();
  }
}
