import { sql, type Insertable, type Kysely, type Selectable } from 'kysely';
import type { Database } from './schema.js';
import { dialectOf, lockScope, writeTransaction } from './dialect.js';
import { WriteBatcher, unitsInTransaction } from './write-batch.js';
import { fundsQuery, holdOnCreate, reserveHold, toFunds } from './holds.js';
import { keptAfterFinishing } from './expiry.js';
import type { CreateWithinLimitResult, KeyUsage, NewTask, ReserveResult, SuccessOutcome, TaskFilter, TaskStore } from '../../ports/task-store.js';
import type { QueriedTask, TaskKind, TaskRecord, TaskState } from '../../domain/task.js';
import { amountToCharge } from '../../domain/pricing.js';
import type { JobPayload } from '../../ports/queue.js';

export type TaskRow = Selectable<Database['tasks']>;
/** What a query reads of a task row: all but its params (QueriedTask) and its hold (billing's, not the answer's). */
export type QueriedRow = Omit<TaskRow, 'params' | 'hold'>;

/**
 * A task row as the domain's TaskRecord (what workers and the admin read; a query reads QueriedTask, without
 * params): a plain object of one shape. Its params are parsed here, not on first read through a getter: an
 * object literal with an accessor is built by a runtime call that leaves it in dictionary mode (bench/results/http.md).
 */
export function toRecord(row: TaskRow, params?: Record<string, unknown>): TaskRecord {
  return {
    // A row just written from a NewTask: its params are already at hand, not parsed back.
    params: params ?? (JSON.parse(row.params) as Record<string, unknown>),
    ...toQueried(row),
  };
}

/** A row read for a query as the domain's QueriedTask: a plain object of one shape (no accessors). */
export function toQueried(row: QueriedRow): QueriedTask {
  return {
    id: row.id,
    kind: row.kind as TaskKind,
    accountId: row.account_id,
    apiKeyId: row.api_key_id,
    state: row.state as TaskState,
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

export interface SqlTaskStoreOptions {
  /**
   * Writes the task's job in create()'s own transaction (the SQL queue on this database), so a
   * task is never created without its job or the other way round. Unset: the caller enqueues.
   */
  alsoEnqueue?: (trx: Kysely<Database>, job: JobPayload) => Promise<void>;
  /** Told after completeSuccess committed a charge, so that a cache of balances in this process can drop it. */
  onCharged?: (accountId: string) => void;
  /**
   * A read of a committed task row (without its params) off Kysely, used by getForQuery(), which every poll
   * calls: synchronous on SQLite (SqliteReadConnection), so it adds no await of its own there; a promise on
   * PostgreSQL (PostgresPollReads). Unset: getForQuery() reads through Kysely.
   */
  readQueried?: (id: string) => QueriedRow | undefined | Promise<QueriedRow | undefined>;
  /**
   * SQLite: writes a batch of creates (count, then insert, each in order) in one transaction and
   * returns their outcomes in order (SqliteTaskCreates); unset: the same steps through Kysely.
   */
  createBatch?: (items: Array<{ task: NewTask; limit: number }>) => Promise<CreateWithinLimitResult[]>;
  /**
   * PostgreSQL: one create (lock the key, count, insert) in a transaction of its own, run off Kysely
   * (PostgresTaskCreates); used where creates are not batched. Unset: the same steps through Kysely.
   */
  createOne?: (task: NewTask, limit: number) => Promise<CreateWithinLimitResult>;
}

/**
 * Every column of a task row, each named (the mapped type makes leaving one out a compile error). Named
 * rather than `select *` because PostgresPollReads keeps this statement prepared on every pooled
 * connection, and PostgreSQL refuses to run a cached plan whose result type changed: a column added by a
 * later migration would break each of those connections, while a named list keeps its row shape.
 */
const taskColumns: { [K in keyof TaskRow]: K } = {
  id: 'id',
  kind: 'kind',
  account_id: 'account_id',
  api_key_id: 'api_key_id',
  state: 'state',
  params: 'params',
  result: 'result',
  error: 'error',
  engine: 'engine',
  progress: 'progress',
  charged: 'charged',
  created_at: 'created_at',
  updated_at: 'updated_at',
  started_at: 'started_at',
  finished_at: 'finished_at',
  expires_at: 'expires_at',
  hold: 'hold',
};

const TASK_COLUMNS: ReadonlyArray<keyof TaskRow> = Object.values(taskColumns);
const { params: _params, hold: _hold, ...queriedColumns } = taskColumns;
const QUERIED_COLUMNS: ReadonlyArray<keyof QueriedRow> = Object.values(queriedColumns);

/** One task row by id: get()'s statement. */
export function taskByIdQuery(db: Kysely<Database>, id: string) {
  return db.selectFrom('tasks').select(TASK_COLUMNS).where('id', '=', id);
}

/** One task row by id without its params: getForQuery()'s statement, through Kysely or compiled once for a hot path. */
export function queriedByIdQuery(db: Kysely<Database>, id: string) {
  return db.selectFrom('tasks').select(QUERIED_COLUMNS).where('id', '=', id);
}

export function newRow(task: NewTask): TaskRow {
  return {
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
    hold: task.hold ?? 0,
  };
}

/** The delivery row of a task's callback_url, written in the task's own transaction. */
export function webhookRow(taskId: string, url: string, createdAt: number): Insertable<Database['webhooks']> {
  return { task_id: taskId, url, state: 'pending', attempts: 0, next_at: 0, last_error: null, created_at: createdAt, updated_at: createdAt };
}

/** A task row's insert: the create's statement, through Kysely or compiled once for a hot path (as are the two below). */
export function insertTaskQuery(db: Kysely<Database>, row: TaskRow) {
  return db.insertInto('tasks').values(row);
}

export function insertWebhookQuery(db: Kysely<Database>, row: Insertable<Database['webhooks']>) {
  return db.insertInto('webhooks').values(row);
}

/** What a create locks (lockScope): every create of one key, across API nodes, so that each count sees the earlier inserts. */
export function createScope(apiKeyId: string): string {
  return `task-limit:${apiKeyId}`;
}

/**
 * Unfinished tasks of a key: one primary-key read of the count the database keeps in key_unfinished (migration
 * 0003), so a create's limit check costs the same whatever the key's backlog; a key that never had a task has
 * no row and counts 0. Read where the limit is enforced (SQLite's write transaction, PostgreSQL's per-key
 * advisory lock), it is as current as a count of the rows: the triggers write it in the transaction that
 * changes the task, and it commits with it.
 */
export function unfinishedCountQuery(db: Kysely<Database>, apiKeyId: string) {
  return db.selectNoFrom((eb) => eb.fn.coalesce(eb.selectFrom('key_unfinished').select('n').where('api_key_id', '=', apiKeyId), eb.lit(0)).as('n'));
}

/** The count, or `atMost` when it is higher (the port's "counted up to"; a count no longer costs more past it). */
async function countUnfinished(db: Kysely<Database>, apiKeyId: string, atMost: number): Promise<number> {
  return Math.min(Number((await unfinishedCountQuery(db, apiKeyId).executeTakeFirstOrThrow()).n), atMost);
}

/** Task store over Kysely; works on SQLite and Postgres alike. */
export class SqlTaskStore implements TaskStore {
  /** Row locks (FOR UPDATE) exist on Postgres only; SQLite's write transaction already excludes other writers. */
  private readonly rowLocks: boolean;
  /** SQLite: creates share commits (WriteBatcher); Postgres commits each in its own transaction, locked per key. */
  private readonly creates: WriteBatcher<{ task: NewTask; limit: number }, CreateWithinLimitResult> | null;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly opts: SqlTaskStoreOptions = {},
  ) {
    this.rowLocks = dialectOf(db) === 'postgres';
    this.creates = this.rowLocks
      ? null
      : new WriteBatcher(opts.createBatch ?? unitsInTransaction(db, (trx, { task, limit }: { task: NewTask; limit: number }) => this.createLocked(trx, task, limit)));
  }

  /** The task row and, when the queue lives in this database, its job: inside the caller's transaction. */
  private async insertWithJob(trx: Kysely<Database>, task: NewTask): Promise<TaskRow> {
    const row = newRow(task);
    await insertTaskQuery(trx, row).execute();
    if (task.callbackUrl) await insertWebhookQuery(trx, webhookRow(task.id, task.callbackUrl, task.createdAt)).execute();
    await this.opts.alsoEnqueue?.(trx, { taskId: task.id, kind: task.kind });
    return row;
  }

  async create(task: NewTask): Promise<TaskRecord> {
    const row = this.opts.alsoEnqueue || task.callbackUrl
      ? await this.db.transaction().execute((trx) => this.insertWithJob(trx, task))
      : await this.insertWithJob(this.db, task);
    return toRecord(row, task.params);
  }

  async createWithinLimit(task: NewTask, limit: number): Promise<CreateWithinLimitResult> {
    // Refused without a transaction: no count can be below a limit of 0.
    if (limit <= 0) return { created: false, reason: 'unfinished_limit' };
    if (this.creates) return this.creates.run({ task, limit });
    if (this.opts.createOne) return this.opts.createOne(task, limit);
    return writeTransaction(this.db, (trx) => this.createLocked(trx, task, limit));
  }

  /** Inside a write transaction: count, then insert, so the count is still true when the row goes in. */
  private async createLocked(trx: Kysely<Database>, task: NewTask, limit: number): Promise<CreateWithinLimitResult> {
    // Creates for one key wait for each other here, so each count sees every earlier insert.
    await lockScope(trx, createScope(task.apiKeyId));
    // Credits before concurrency, as TaskService's pre-checks (the spec's order of refusals).
    const hold = holdOnCreate(toFunds(await fundsQuery(trx, task.accountId, this.rowLocks).executeTakeFirst()), task);
    if (hold === null) return { created: false, reason: 'insufficient_credits' };
    if ((await countUnfinished(trx, task.apiKeyId, limit)) >= limit) return { created: false, reason: 'unfinished_limit' };
    return { created: true, task: toRecord(await this.insertWithJob(trx, { ...task, hold }), task.params) };
  }

  async reserve(id: string, price: number): Promise<ReserveResult> {
    return writeTransaction(this.db, (trx) => reserveHold(trx, id, price, this.rowLocks));
  }

  async get(id: string): Promise<TaskRecord | null> {
    const row = await taskByIdQuery(this.db, id).executeTakeFirst();
    return row ? toRecord(row) : null;
  }

  async getForQuery(id: string): Promise<QueriedTask | null> {
    if (this.opts.readQueried) {
      const read = this.opts.readQueried(id);
      // Awaited only when it is a promise: the synchronous SQLite read stays free of an extra tick.
      const row = read instanceof Promise ? await read : read;
      return row ? toQueried(row) : null;
    }
    const row = await queriedByIdQuery(this.db, id).executeTakeFirst();
    return row ? toQueried(row) : null;
  }

  async getParams(id: string): Promise<Record<string, unknown> | null> {
    const row = await this.db.selectFrom('tasks').select('params').where('id', '=', id).executeTakeFirst();
    return row ? (JSON.parse(row.params) as Record<string, unknown>) : null;
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
    let charged: string | null = null;
    const done = await writeTransaction(this.db, async (trx) => {
      // Locked in this order (task, then its account) so that a second completion of the task waits
      // and then sees it finished, and two tasks of one account charge one after the other.
      const task = await trx
        .selectFrom('tasks')
        .select(['state', 'account_id', 'hold'])
        .where('id', '=', id)
        .$if(this.rowLocks, (q) => q.forUpdate())
        .executeTakeFirst();
      if (!task || task.state === 'success' || task.state === 'failed') return false;
      const account = await trx
        .selectFrom('accounts')
        .select(['balance', 'held'])
        .where('id', '=', task.account_id)
        .$if(this.rowLocks, (q) => q.forUpdate())
        .executeTakeFirstOrThrow();
      // What the account's other unfinished tasks hold is theirs: a price over this task's own hold (a podcast episode
      // longer than its minimum) takes what is left beside them, never their credits, which made them free.
      const othersHold = Math.max(0, Number(account.held) - Number(task.hold));
      const charge = amountToCharge(outcome.price, Number(account.balance) - othersHold);
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
          expires_at: keptAfterFinishing(now),
        })
        .where('id', '=', id)
        .execute();
      charged = task.account_id;
      return true;
    });
    if (charged !== null) this.opts.onCharged?.(charged);
    return done;
  }

  async completeFailure(id: string, error: string, now: number): Promise<boolean> {
    const res = await this.db
      .updateTable('tasks')
      .set({ state: 'failed', error, finished_at: now, updated_at: now, expires_at: keptAfterFinishing(now) })
      .where('id', '=', id)
      .where('state', 'in', ['queued', 'running'])
      .executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  async countUnfinishedForKey(apiKeyId: string, atMost: number): Promise<number> {
    return countUnfinished(this.db, apiKeyId, atMost);
  }

  // Ties are broken by id: without it the two databases return equal timestamps in different orders.
  async list(filter: TaskFilter): Promise<TaskRecord[]> {
    let q = this.db.selectFrom('tasks').selectAll().orderBy('created_at', 'desc').orderBy('id').limit(filter.limit);
    if (filter.state) q = q.where('state', '=', filter.state);
    if (filter.kind) q = q.where('kind', '=', filter.kind);
    return (await q.execute()).map((row) => toRecord(row));
  }

  async usageByKey(): Promise<KeyUsage[]> {
    const rows = await this.db
      .selectFrom('tasks')
      .select((eb) => [
        'api_key_id',
        eb.fn.countAll<number | string>().as('tasks'),
        sql<number | string>`sum(case when state = 'success' then 1 else 0 end)`.as('succeeded'),
        sql<number | string>`sum(case when state = 'failed' then 1 else 0 end)`.as('failed'),
        sql<number | string>`coalesce(sum(charged), 0)`.as('credits'),
      ])
      .groupBy('api_key_id')
      .execute();
    // PostgreSQL answers counts and sums as bigint strings.
    return rows.map((r) => ({ apiKeyId: r.api_key_id, tasks: Number(r.tasks), succeeded: Number(r.succeeded), failed: Number(r.failed), credits: Number(r.credits) }));
  }

  async listUnfinished(kinds: readonly TaskKind[], afterId: string | null, limit: number): Promise<JobPayload[]> {
    if (kinds.length === 0) return [];
    let q = this.db
      .selectFrom('tasks')
      .select(['id', 'kind'])
      .where('state', 'in', ['queued', 'running'])
      .where('kind', 'in', [...kinds])
      .orderBy('id')
      .limit(limit);
    if (afterId !== null) q = q.where('id', '>', afterId);
    return (await q.execute()).map((r) => ({ taskId: r.id, kind: r.kind as TaskKind }));
  }

  async listExpired(now: number, limit: number): Promise<TaskRecord[]> {
    const rows = await this.db
      .selectFrom('tasks')
      .selectAll()
      .where('expires_at', '<=', now)
      .where('state', '<>', 'running')
      .orderBy('expires_at')
      .orderBy('id')
      .limit(limit)
      .execute();
    return rows.map((row) => toRecord(row));
  }

  async delete(id: string): Promise<void> {
    await this.db.deleteFrom('webhooks').where('task_id', '=', id).execute();
    await this.db.deleteFrom('tasks').where('id', '=', id).execute();
  }

  async ping(): Promise<void> {
    await this.db.selectFrom('tasks').select('id').limit(1).execute();
  }
}
