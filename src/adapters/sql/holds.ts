import { sql, type Kysely } from 'kysely';
import type { Database } from './schema.js';
import type { SqlDialect } from './dialect.js';
import type { Funds, NewTask, ReserveResult } from '../../ports/task-store.js';

/** What "unfinished" means to holds: the same states as the limit of unfinished tasks (migrations.ts). */
const UNFINISHED = sql.raw(`('queued', 'running')`);

/**
 * Credit holds (docs/api.md "Billing"). A task whose price is known holds it (tasks.hold) while it is
 * unfinished: TTS from its create, separation and enhancement from the moment their input is decoded
 * (TaskStore.reserve). accounts.held, each account's sum of the holds of its unfinished tasks, is kept by
 * triggers on tasks, as key_unfinished is (0003), so that every writer keeps it exact (the store's methods,
 * the CLI, raw SQL) and a hold is released by whatever finishes or deletes its task, with no code path to
 * forget. A create and a reservation read it as one primary-key read of the account row.
 * - insert of an unfinished task with a hold: + its hold to its account;
 * - update of state, hold or account_id: - the old hold from the old account if the old row held, + the new
 *   hold to the new account if the new row holds, unless none of the three changed what is held;
 * - delete of an unfinished task with a hold: - its hold.
 * No check constraint on held: a trigger bug must not make task writes fail; the contract test keeps it exact.
 */
export async function createAccountHolds(db: Kysely<any>, dialect: SqlDialect): Promise<void> {
  // A new column with a constant default: no table rewrite on either database; existing tasks hold nothing.
  await db.schema.alterTable('tasks').addColumn('hold', 'bigint', (c) => c.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('accounts').addColumn('held', 'bigint', (c) => c.notNull().defaultTo(0)).execute();
  const take = sql`update accounts set held = held + new.hold where id = new.account_id`;
  const give = sql`update accounts set held = held - old.hold where id = old.account_id`;
  const changed = sql`(new.hold <> old.hold or new.account_id <> old.account_id)`;
  const triggers = [
    { name: 'tasks_hold_insert', on: sql`after insert`, when: sql`new.state in ${UNFINISHED} and new.hold > 0`, body: take, fn: 'take' },
    {
      name: 'tasks_hold_give',
      on: sql`after update of state, hold, account_id`,
      when: sql`old.state in ${UNFINISHED} and old.hold > 0 and (new.state not in ${UNFINISHED} or ${changed})`,
      body: give,
      fn: 'give',
    },
    {
      name: 'tasks_hold_take',
      on: sql`after update of state, hold, account_id`,
      when: sql`new.state in ${UNFINISHED} and new.hold > 0 and (old.state not in ${UNFINISHED} or ${changed})`,
      body: take,
      fn: 'take',
    },
    { name: 'tasks_hold_delete', on: sql`after delete`, when: sql`old.state in ${UNFINISHED} and old.hold > 0`, body: give, fn: 'give' },
  ] as const;
  if (dialect === 'postgres') {
    for (const [fn, body] of [['take', take], ['give', give]] as const) {
      await sql`create function ${sql.raw(`account_hold_${fn}`)}() returns trigger language plpgsql as $$
        begin ${body}; return null; end $$`.execute(db);
    }
    for (const t of triggers) {
      await sql`create trigger ${sql.raw(t.name)} ${t.on} on tasks for each row when (${t.when})
        execute function ${sql.raw(`account_hold_${t.fn}`)}()`.execute(db);
    }
    // TRUNCATE fires no row triggers: with the tasks gone, nothing is held.
    await sql`create function account_hold_truncate() returns trigger language plpgsql as $$
      begin update accounts set held = 0 where held <> 0; return null; end $$`.execute(db);
    await sql`create trigger tasks_hold_truncate after truncate on tasks for each statement execute function account_hold_truncate()`.execute(db);
  } else {
    for (const t of triggers) await sql`create trigger ${sql.raw(t.name)} ${t.on} on tasks when ${t.when} begin ${t.body}; end`.execute(db);
  }
}

/**
 * An account's balance and what its unfinished tasks hold: a create's and a reservation's check, inside their
 * write transaction. PostgreSQL: FOR UPDATE, so that creates and reservations of one account (through any of
 * its keys, on any node) check one after the other; completions lock the task, then its account, and so do
 * these (a new task's row is nobody else's to lock), so the order never crosses.
 */
export function fundsQuery(db: Kysely<Database>, accountId: string, lock: boolean) {
  return db
    .selectFrom('accounts')
    .select(['balance', 'held'])
    .where('id', '=', accountId)
    .$if(lock, (q) => q.forUpdate());
}

/** A funds row as numbers (PostgreSQL answers bigint as strings); a missing account has nothing. */
export function toFunds(row: { balance: number | string; held: number | string } | undefined): Funds {
  return row ? { balance: Number(row.balance), held: Number(row.held) } : { balance: 0, held: 0 };
}

/**
 * Whether a task holding `hold` may be created: something must be left once the other unfinished tasks' holds
 * are set aside, and, for a known price, all of it. The same rule as TaskService's pre-check, on current funds.
 */
export function affordable(funds: Funds, hold: number): boolean {
  const available = funds.balance - funds.held;
  return available > 0 && available >= hold;
}

/**
 * The hold a new task takes on these funds (its `hold`, or its `holdUpTo` as far as what is available goes), or
 * null when it may not be created (see affordable). Every adapter's create asks this, inside its transaction.
 */
export function holdOnCreate(funds: Funds, task: Pick<NewTask, 'hold' | 'holdUpTo'>): number | null {
  if (task.hold !== undefined) return affordable(funds, task.hold) ? task.hold : null;
  if (!affordable(funds, 0)) return null;
  return Math.min(task.holdUpTo ?? 0, funds.balance - funds.held);
}

/**
 * TaskStore.reserve inside a write transaction: the task (locked first, as a completion locks it), then its
 * account's funds, less the task's own current hold (a retried run replaces it), then the new hold.
 */
export async function reserveHold(trx: Kysely<Database>, id: string, price: number, rowLocks: boolean): Promise<ReserveResult> {
  const task = await trx
    .selectFrom('tasks')
    .select(['state', 'account_id', 'hold'])
    .where('id', '=', id)
    .$if(rowLocks, (q) => q.forUpdate())
    .executeTakeFirst();
  if (!task || (task.state !== 'queued' && task.state !== 'running')) return { reserved: false, funds: { balance: 0, held: 0 } };
  // Nothing to pay (CREDITS_PER_MINUTE=0): nothing to hold, whatever the funds.
  if (price <= 0) {
    if (Number(task.hold) !== 0) await trx.updateTable('tasks').set({ hold: 0 }).where('id', '=', id).execute();
    return { reserved: true };
  }
  const seen = toFunds(await fundsQuery(trx, task.account_id, rowLocks).executeTakeFirst());
  const funds = { balance: seen.balance, held: seen.held - Number(task.hold) };
  if (!affordable(funds, price)) return { reserved: false, funds };
  if (Number(task.hold) !== price) await trx.updateTable('tasks').set({ hold: price }).where('id', '=', id).execute();
  return { reserved: true };
}
