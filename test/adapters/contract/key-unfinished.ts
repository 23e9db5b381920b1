import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { expect, it } from 'vitest';
import type { StoreFixture } from '../store-contract.js';
import { random, STATES } from './seeded.js';


/**
 * Every key's counter (key_unfinished, kept by triggers) against a count of its task rows: keys with tasks,
 * and keys with a counter row but no tasks left, which must count 0.
 */
async function expectCountersExact(fx: StoreFixture, context: string): Promise<void> {
  const counted = await fx.db
    .selectFrom('tasks')
    .select((eb) => ['api_key_id', eb.fn.countAll<number | string>().as('n')])
    .where('state', 'in', ['queued', 'running'])
    .groupBy('api_key_id')
    .execute();
  const kept = await fx.db.selectFrom('key_unfinished').select(['api_key_id', 'n']).execute();
  const keys = new Set([...counted.map((r) => r.api_key_id), ...kept.map((r) => r.api_key_id)]);
  const want = Object.fromEntries([...keys].map((k) => [k, Number(counted.find((r) => r.api_key_id === k)?.n ?? 0)]));
  const got = Object.fromEntries([...keys].map((k) => [k, Number(kept.find((r) => r.api_key_id === k)?.n ?? 0)]));
  expect(got, context).toEqual(want);
  for (const key of keys) expect(await fx.tasks.countUnfinishedForKey(key, 1_000_000), `${context}: ${key}`).toBe(want[key]);
}

/**
 * The per-key count of unfinished tasks that createWithinLimit checks is kept by the database (migration
 * 0003_key_unfinished): whatever writes the task rows, the store's methods or raw SQL, it stays exact.
 */
export function keyUnfinishedContract(use: () => StoreFixture): void {
  it("keeps each key's unfinished count exact through a seeded mix of store methods and raw SQL", async () => {
    const fx = use();
    const { db, tasks, seed, task } = fx;
    const owners = [await seed({ credits: 1_000 }), await seed({ credits: 1_000 }), await seed({ credits: 1_000 })];
    const next = random(20_261_124);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!;
    const ids: string[] = [];
    const someId = () => (ids.length ? pick(ids) : 'no-such-task');
    const now = () => Date.now();

    const steps: Array<[string, () => Promise<unknown>]> = [
      ['createWithinLimit', async () => {
        const made = await tasks.createWithinLimit(task(pick(owners)), 1 + Math.floor(next() * 12));
        if (made.created) ids.push(made.task.id);
      }],
      ['create', async () => ids.push((await tasks.create(task(pick(owners)))).id)],
      ['markRunning', () => tasks.markRunning(someId(), now())],
      ['setProgress', () => tasks.setProgress(someId(), next(), now())],
      ['completeSuccess', () => tasks.completeSuccess(someId(), { result: {}, engine: 'e', price: 1 }, now())],
      ['completeFailure', () => tasks.completeFailure(someId(), 'boom', now())],
      // The reaper: expired tasks, whatever their state, deleted one by one.
      ['reap', async () => {
        const id = someId();
        await db.updateTable('tasks').set({ expires_at: 0 }).where('id', '=', id).execute();
        for (const t of await tasks.listExpired(now(), 10)) await tasks.delete(t.id);
      }],
      ['raw update state', () => sql`update tasks set state = ${pick(STATES)} where id = ${someId()}`.execute(db)],
      // A no-op for the count: state set to what it is.
      ['raw update same state', () => sql`update tasks set state = state, updated_at = ${now()} where id = ${someId()}`.execute(db)],
      ['raw update key', () => sql`update tasks set api_key_id = ${pick(owners).keyId} where id = ${someId()}`.execute(db)],
      ['raw update key and state', () => sql`update tasks set api_key_id = ${pick(owners).keyId}, state = ${pick(STATES)} where id = ${someId()}`.execute(db)],
      // Many rows in one statement: every failed task of a key queued again, as an operator's retry would.
      ['raw requeue failed', () => sql`update tasks set state = 'queued' where api_key_id = ${pick(owners).keyId} and state = 'failed'`.execute(db)],
      ['raw fail running', () => sql`update tasks set state = 'failed' where api_key_id = ${pick(owners).keyId} and state = 'running'`.execute(db)],
      ['raw delete', () => sql`delete from tasks where id = ${someId()}`.execute(db)],
      ['raw insert', async () => {
        const t = task(pick(owners));
        const state = pick(STATES);
        await sql`insert into tasks (id, kind, account_id, api_key_id, state, params, progress, created_at, updated_at, expires_at)
          values (${t.id}, 'tts', ${t.accountId}, ${t.apiKeyId}, ${state}, '{}', 0, ${t.createdAt}, ${t.createdAt}, ${t.expiresAt})`.execute(db);
        ids.push(t.id);
      }],
    ];

    const done: string[] = [];
    for (let i = 0; i < 400; i++) {
      const [name, step] = pick(steps);
      await step();
      done.push(name);
      if (i % 50 === 49) await expectCountersExact(fx, `after step ${i} (${name})`);
    }
    await expectCountersExact(fx, 'at the end');
    // Every kind of step ran, so none of the triggers went untested by chance.
    expect(new Set(done)).toEqual(new Set(steps.map(([name]) => name)));

    // And the limit reads that count: exactly at it, refused; one above, created.
    const owner = owners[0]!;
    const n = await tasks.countUnfinishedForKey(owner.keyId, 1_000_000);
    expect(n).toBeGreaterThan(0);
    expect(await tasks.createWithinLimit(task(owner), n)).toEqual({ created: false, reason: 'unfinished_limit' });
    expect((await tasks.createWithinLimit(task(owner), n + 1)).created).toBe(true);
    expect(await tasks.countUnfinishedForKey(owner.keyId, 1_000_000)).toBe(n + 1);
  });

  it('keeps the counts exact with creates, completions and deletes of the same keys at once', async () => {
    const fx = use();
    const { tasks, seed, task } = fx;
    const owners = [await seed({ credits: 1_000 }), await seed({ credits: 1_000 })];
    const made = await Promise.all(Array.from({ length: 20 }, (_, i) => tasks.create(task(owners[i % 2]!))));
    await Promise.all([
      ...Array.from({ length: 20 }, (_, i) => tasks.createWithinLimit(task(owners[i % 2]!), 25)),
      ...made.slice(0, 6).map((t) => tasks.completeSuccess(t.id, { result: {}, engine: 'e', price: 1 }, Date.now())),
      ...made.slice(6, 12).map((t) => tasks.completeFailure(t.id, 'boom', Date.now())),
      ...made.slice(12, 16).map((t) => tasks.markRunning(t.id, Date.now())),
      ...made.slice(16, 20).map((t) => tasks.delete(t.id)),
    ]);
    await expectCountersExact(fx, 'after the burst');
    expect(await tasks.countUnfinishedForKey(owners[0]!.keyId, 1_000_000)).toBe(2 + 10);
  });

  it('a key that never had a task counts 0, and a key whose tasks all finished counts 0 again', async () => {
    const { tasks, seed, task } = use();
    expect(await tasks.countUnfinishedForKey(`key_${randomUUID()}`, 10)).toBe(0);
    const owner = await seed();
    const t = await tasks.create(task(owner));
    expect(await tasks.countUnfinishedForKey(owner.keyId, 10)).toBe(1);
    await tasks.completeFailure(t.id, 'boom', Date.now());
    expect(await tasks.countUnfinishedForKey(owner.keyId, 10)).toBe(0);
    expect((await tasks.createWithinLimit(task(owner), 1)).created).toBe(true);
  });

  it('PostgreSQL: TRUNCATE of tasks, which fires no row triggers, empties the counts too', async () => {
    const fx = use();
    if (fx.backend.dialect !== 'postgres') return;
    const owner = await fx.seed();
    for (let i = 0; i < 3; i++) await fx.tasks.create(fx.task(owner));
    expect(await fx.tasks.countUnfinishedForKey(owner.keyId, 10)).toBe(3);
    await sql`truncate tasks`.execute(fx.db);
    await expectCountersExact(fx, 'after truncate');
    expect((await fx.tasks.createWithinLimit(fx.task(owner), 1)).created).toBe(true);
  });
}
