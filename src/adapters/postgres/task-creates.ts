import type pg from 'pg';
import type { Kysely } from 'kysely';
import type { Database } from '../sql/schema.js';
import { slot, slots } from '../sql/compiled-once.js';
import { scopeKey, scopeLockQuery } from '../sql/dialect.js';
import { createScope, insertTaskQuery, insertWebhookQuery, newRow, toRecord, unfinishedCountQuery, webhookRow } from '../sql/task-store.js';
import { insertJobQuery, jobRow } from '../sql/queue-rows.js';
import { fundsQuery, holdOnCreate, toFunds } from '../sql/holds.js';
import type { CreateWithinLimitResult, NewTask } from '../../ports/task-store.js';
import { Named } from './named.js';

/**
 * Task creates on PostgreSQL off Kysely (SqlTaskStore's createOne): on one pooled client, BEGIN (read
 * committed, as writeTransaction), the key's advisory lock, the count of its unfinished tasks, the task
 * row (its webhook, its job), COMMIT. The same steps and locks as SqlTaskStore.createLocked, so creates of
 * one key stay serialized across API nodes, and the count is still true when the row goes in. Each
 * statement is compiled once from the builders the Kysely path runs and sent as a named prepared
 * statement: through Kysely each of them was built, compiled and sent unnamed, for the server to parse
 * and plan again (bench/results/scaleout.md).
 */
export class PostgresTaskCreates {
  private readonly lock: Named;
  private readonly count: Named;
  private readonly funds: Named;
  private readonly insertTask: Named;
  private readonly insertWebhook: Named;
  private readonly insertJob: Named | null;

  /**
   * `jobClock`: set when the SQL queue lives in this database, so each task's job row goes in with it,
   * due at the queue's now (SqlJobQueue's clock, as its enqueueWithin would write it). Null with BullMQ:
   * the service enqueues after the commit.
   */
  constructor(
    db: Kysely<Database>,
    private readonly pool: pg.Pool,
    private readonly jobClock: (() => number) | null,
  ) {
    const sample: NewTask = { id: '', kind: 'tts', accountId: '', apiKeyId: '', params: {}, createdAt: 0, expiresAt: 0 };
    this.lock = new Named('soundry_create_lock', scopeLockQuery(db, slot('key')));
    this.count = new Named('soundry_create_count', unfinishedCountQuery(db, slot('apiKeyId')));
    this.funds = new Named('soundry_create_funds', fundsQuery(db, slot('accountId'), true));
    this.insertTask = new Named('soundry_create_task', insertTaskQuery(db, slots(newRow(sample))));
    this.insertWebhook = new Named('soundry_create_webhook', insertWebhookQuery(db, slots(webhookRow('', '', 0))));
    this.insertJob = jobClock ? new Named('soundry_create_job', insertJobQuery(db, slots(jobRow({ taskId: '', kind: 'tts' }, 0)))) : null;
  }

  readonly createOne = async (task: NewTask, limit: number): Promise<CreateWithinLimitResult> => {
    const client = await this.pool.connect();
    let failure: Error | undefined;
    try {
      await client.query('begin isolation level read committed');
      try {
        const outcome = await this.steps(client, task, limit);
        await client.query('commit');
        return outcome;
      } catch (err) {
        // The first error is the one worth reporting; a ROLLBACK that fails too says the connection is gone.
        await client.query('rollback').catch(() => undefined);
        throw err;
      }
    } catch (err) {
      // Whether the connection is still sound after an error mid-transaction (a timeout, a dropped
      // socket, a rollback that failed) is not worth guessing at on a path that rarely errs: handing the
      // error to release() makes the pool close it and open a fresh one.
      failure = err instanceof Error ? err : new Error(String(err));
      throw err;
    } finally {
      client.release(failure);
    }
  };

  private async steps(client: pg.PoolClient, task: NewTask, limit: number): Promise<CreateWithinLimitResult> {
    // Creates for one key wait for each other here, so each count sees every earlier insert.
    await this.lock.run(client, { key: scopeKey(createScope(task.apiKeyId)) });
    // Credits before concurrency; the account row stays locked to commit, so creates through its other keys wait.
    const funds = await this.funds.first<{ balance: number | string; held: number | string }>(client, { accountId: task.accountId });
    const hold = holdOnCreate(toFunds(funds), task);
    if (hold === null) return { created: false, reason: 'insufficient_credits' };
    const counted = await this.count.first<{ n: number | string }>(client, { apiKeyId: task.apiKeyId });
    if (Number(counted?.n ?? 0) >= limit) return { created: false, reason: 'unfinished_limit' };
    const row = newRow({ ...task, hold });
    await this.insertTask.run(client, row);
    if (task.callbackUrl) await this.insertWebhook.run(client, webhookRow(task.id, task.callbackUrl, task.createdAt));
    if (this.insertJob && this.jobClock) await this.insertJob.run(client, jobRow({ taskId: task.id, kind: task.kind }, this.jobClock()));
    return { created: true, task: toRecord(row, task.params) };
  }
}
