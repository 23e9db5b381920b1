import type BetterSqlite3 from 'better-sqlite3';
import type { Compilable, Kysely } from 'kysely';
import type { Database } from '../sql/schema.js';
import { insertTaskQuery, insertWebhookQuery, newRow, toRecord, unfinishedCountQuery, webhookRow } from '../sql/task-store.js';
import { fundsQuery, holdOnCreate, toFunds } from '../sql/holds.js';
import { insertJobQuery, jobRow } from '../sql/queue-rows.js';
import { compileOnce, slot, slots, type CompiledOnce } from '../sql/compiled-once.js';
import type { CreateWithinLimitResult, NewTask } from '../../ports/task-store.js';

/** A statement compiled once (compileOnce), run by better-sqlite3 as a prepared statement with its slots bound from a plain object. */
class Prepared {
  private readonly stmt: BetterSqlite3.Statement;
  private readonly bind: CompiledOnce['bind'];

  constructor(raw: BetterSqlite3.Database, query: Compilable) {
    const compiled = compileOnce(query);
    this.stmt = raw.prepare(compiled.sql);
    this.bind = compiled.bind;
  }

  get<T>(values: Record<string, unknown>): T | undefined {
    return this.stmt.get(this.bind(values)) as T | undefined;
  }

  run(values: Record<string, unknown>): void {
    this.stmt.run(this.bind(values));
  }
}

/**
 * Task creates on the embedded database, a batch at a time (SqlTaskStore's createBatch): count the
 * key's unfinished tasks, insert the task (its webhook, its job), each create in arrival order, all in
 * one BEGIN IMMEDIATE transaction run synchronously on Kysely's own connection while holding it, so no
 * other statement can interleave. Through Kysely the same batch cost about 2.5x the CPU (each statement
 * built, compiled and awaited through the connection mutex; bench/results/http.md). A failing create
 * throws and rolls the whole batch back; the WriteBatcher then writes each create alone.
 */
export class SqliteTaskCreates {
  /** The key's unfinished count (key_unfinished, kept by triggers): one statement whatever the key's limit. */
  private readonly count: Prepared;
  /** The account's balance and holds (accounts.held, kept by triggers): one primary-key read. */
  private readonly funds: Prepared;
  private readonly insertTask: Prepared;
  private readonly insertWebhook: Prepared;
  private readonly insertJob: Prepared | null;
  private readonly transaction: (items: Array<{ task: NewTask; limit: number }>) => CreateWithinLimitResult[];

  /**
   * `jobClock`: set when the SQL queue lives in this database, so each task's job row goes in with it,
   * due at the queue's now (SqlJobQueue's clock, as its enqueueWithin would write it).
   */
  constructor(
    private readonly db: Kysely<Database>,
    raw: BetterSqlite3.Database,
    private readonly jobClock: (() => number) | null,
  ) {
    const sample: NewTask = { id: '', kind: 'tts', accountId: '', apiKeyId: '', params: {}, createdAt: 0, expiresAt: 0 };
    this.count = new Prepared(raw, unfinishedCountQuery(db, slot('apiKeyId')));
    this.funds = new Prepared(raw, fundsQuery(db, slot('accountId'), false));
    this.insertTask = new Prepared(raw, insertTaskQuery(db, slots(newRow(sample))));
    this.insertWebhook = new Prepared(raw, insertWebhookQuery(db, slots(webhookRow('', '', 0))));
    this.insertJob = jobClock ? new Prepared(raw, insertJobQuery(db, slots(jobRow({ taskId: '', kind: 'tts' }, 0)))) : null;
    this.transaction = raw.transaction((items: Array<{ task: NewTask; limit: number }>) => items.map((item) => this.createOne(item.task, item.limit))).immediate;
  }

  /** The outcomes in the order of `items`; throws (nothing written) if any create fails. */
  writeBatch = (items: Array<{ task: NewTask; limit: number }>): Promise<CreateWithinLimitResult[]> =>
    this.db.connection().execute(async () => this.transaction(items));

  private createOne(task: NewTask, limit: number): CreateWithinLimitResult {
    // Credits before concurrency, as TaskService's pre-checks; an earlier create of this batch already holds its share.
    const funds = this.funds.get<{ balance: number; held: number }>({ accountId: task.accountId });
    const hold = holdOnCreate(toFunds(funds), task);
    if (hold === null) return { created: false, reason: 'insufficient_credits' };
    const counted = this.count.get<{ n: number }>({ apiKeyId: task.apiKeyId });
    if (Number(counted?.n ?? 0) >= limit) return { created: false, reason: 'unfinished_limit' };
    const row = newRow({ ...task, hold });
    this.insertTask.run(row);
    if (task.callbackUrl) this.insertWebhook.run(webhookRow(task.id, task.callbackUrl, task.createdAt));
    if (this.insertJob && this.jobClock) this.insertJob.run(jobRow({ taskId: task.id, kind: task.kind }, this.jobClock()));
    return { created: true, task: toRecord(row, task.params) };
  }
}
