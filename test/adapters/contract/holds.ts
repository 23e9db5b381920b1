import { sql } from 'kysely';
import { expect, it } from 'vitest';
import type { StoreFixture } from '../store-contract.js';
import { random, STATES } from './seeded.js';


async function fundsOf(fx: StoreFixture, accountId: string): Promise<{ balance: number; held: number }> {
  const row = await fx.db.selectFrom('accounts').select(['balance', 'held']).where('id', '=', accountId).executeTakeFirstOrThrow();
  return { balance: Number(row.balance), held: Number(row.held) };
}

/** Every account's held (kept by triggers) against the sum of its unfinished tasks' holds. */
async function expectHeldExact(fx: StoreFixture, accountIds: string[], context: string): Promise<void> {
  const summed = await fx.db
    .selectFrom('tasks')
    .select((eb) => ['account_id', eb.fn.sum<number | string>('hold').as('held')])
    .where('state', 'in', ['queued', 'running'])
    .groupBy('account_id')
    .execute();
  const want = Object.fromEntries(accountIds.map((a) => [a, Number(summed.find((r) => r.account_id === a)?.held ?? 0)]));
  const got = Object.fromEntries(await Promise.all(accountIds.map(async (a) => [a, (await fundsOf(fx, a)).held] as const)));
  expect(got, context).toEqual(want);
}

/**
 * Credit holds (migration 0004_holds, docs/api.md "Billing"): what unfinished tasks hold is set aside from the
 * balance when a create or a reservation is checked, and released by whatever finishes or deletes the task.
 */
export function holdsContract(use: () => StoreFixture): void {
  it('refuses a create its account cannot cover beside the holds of its unfinished tasks, and frees a hold when its task ends', async () => {
    const { tasks, seed, task } = use();
    const owner = await seed({ credits: 10 });
    const first = await tasks.createWithinLimit(task(owner, { hold: 6 }), 100);
    expect(first.created).toBe(true);
    // 4 left: 6 more is refused, 4 is taken, and then nothing is left even for a task of unknown price.
    expect(await tasks.createWithinLimit(task(owner, { hold: 6 }), 100)).toEqual({ created: false, reason: 'insufficient_credits' });
    expect((await tasks.createWithinLimit(task(owner, { hold: 4 }), 100)).created).toBe(true);
    expect(await tasks.createWithinLimit(task(owner, { kind: 'separation' }), 100)).toEqual({ created: false, reason: 'insufficient_credits' });
    expect(await fundsOf(use(), owner.accountId)).toEqual({ balance: 10, held: 10 });
    // Credits are checked before the key's limit (the spec's order of refusals).
    expect(await tasks.createWithinLimit(task(owner, { hold: 1 }), 2)).toEqual({ created: false, reason: 'insufficient_credits' });
    // A failed task costs nothing and holds nothing: its 6 are available again.
    if (!first.created) throw new Error('unreachable');
    await tasks.completeFailure(first.task.id, 'boom', Date.now());
    expect(await fundsOf(use(), owner.accountId)).toEqual({ balance: 10, held: 4 });
    expect((await tasks.createWithinLimit(task(owner, { hold: 6 }), 100)).created).toBe(true);
  });

  it('holds a podcast episode\'s minimum price as far as the balance goes (holdUpTo), one create after the other', async () => {
    const fx = use();
    const owner = await fx.seed({ credits: 25 });
    // Six episodes at once on 25 credits: 10, 10, then the 5 left (the spec lets a lower balance pay in part); the rest refused.
    const made = await Promise.all(
      Array.from({ length: 6 }, () => fx.tasks.createWithinLimit(fx.task(owner, { kind: 'podcast_audio', holdUpTo: 10 }), 100)),
    );
    expect(made.filter((m) => m.created)).toHaveLength(3);
    expect(made.filter((m) => !m.created).every((m) => !m.created && m.reason === 'insufficient_credits')).toBe(true);
    expect(await fundsOf(fx, owner.accountId)).toEqual({ balance: 25, held: 25 });
    const holds = await fx.db.selectFrom('tasks').select('hold').where('account_id', '=', owner.accountId).execute();
    expect(holds.map((h) => Number(h.hold)).sort((a, b) => a - b)).toEqual([5, 10, 10]);
    // An episode's success charges its price, capped by what the others' holds leave (here its own hold), and releases it.
    const first = made.find((m) => m.created);
    if (!first?.created) throw new Error('unreachable');
    const itsHold = Number((await fx.db.selectFrom('tasks').select('hold').where('id', '=', first.task.id).executeTakeFirstOrThrow()).hold);
    expect(await fx.tasks.completeSuccess(first.task.id, { result: {}, engine: 'e', price: 20 }, Date.now())).toBe(true);
    expect(await fundsOf(fx, owner.accountId)).toEqual({ balance: 25 - itsHold, held: 25 - itsHold });
  });

  it('a price over its own hold takes what the other unfinished tasks leave, never what they hold', async () => {
    const fx = use();
    const owner = await fx.seed({ credits: 25 });
    const episode = await fx.tasks.createWithinLimit(fx.task(owner, { kind: 'podcast_audio', holdUpTo: 10 }), 100);
    const tts = await fx.tasks.createWithinLimit(fx.task(owner, { hold: 3 }), 100);
    if (!episode.created || !tts.created) throw new Error('both are created');
    expect(await fundsOf(fx, owner.accountId)).toEqual({ balance: 25, held: 13 });
    // A 4-minute episode (40) finishes first: 22 of the 25, the TTS task's 3 stay for it.
    expect(await fx.tasks.completeSuccess(episode.task.id, { result: {}, engine: 'e', price: 40 }, Date.now())).toBe(true);
    expect(await fundsOf(fx, owner.accountId)).toEqual({ balance: 3, held: 3 });
    expect(await fx.tasks.completeSuccess(tts.task.id, { result: {}, engine: 'e', price: 3 }, Date.now())).toBe(true);
    expect(await fundsOf(fx, owner.accountId)).toEqual({ balance: 0, held: 0 });
    const charged = await fx.db.selectFrom('tasks').select(['id', 'charged']).where('account_id', '=', owner.accountId).execute();
    expect(Object.fromEntries(charged.map((t) => [t.id, Number(t.charged)]))).toEqual({ [episode.task.id]: 22, [tts.task.id]: 3 });
  });

  it('reserves a price once it is known, counts a retried task\'s own hold as its own, and charges it on success', async () => {
    const { tasks, seed, task } = use();
    const owner = await seed({ credits: 10 });
    const a = await tasks.create(task(owner, { kind: 'separation' }));
    const b = await tasks.create(task(owner, { kind: 'enhance' }));
    expect(await tasks.reserve(a.id, 7)).toEqual({ reserved: true });
    expect(await tasks.reserve(b.id, 4)).toEqual({ reserved: false, funds: { balance: 10, held: 7 } });
    // The same task again (a run retried after a crash): its own 7 are not counted against it.
    expect(await tasks.reserve(a.id, 7)).toEqual({ reserved: true });
    expect(await tasks.reserve(a.id, 9)).toEqual({ reserved: true });
    expect(await fundsOf(use(), owner.accountId)).toEqual({ balance: 10, held: 9 });
    expect(await tasks.completeSuccess(a.id, { result: {}, engine: 'e', price: 9 }, Date.now())).toBe(true);
    expect(await fundsOf(use(), owner.accountId)).toEqual({ balance: 1, held: 0 });
    expect(await tasks.reserve(b.id, 1)).toEqual({ reserved: true });
    // A finished task reserves nothing; a price of 0 always passes and holds nothing.
    expect(await tasks.reserve(a.id, 1)).toEqual({ reserved: false, funds: { balance: 0, held: 0 } });
    expect(await tasks.reserve('no-such-task', 1)).toEqual({ reserved: false, funds: { balance: 0, held: 0 } });
    expect(await tasks.reserve(b.id, 0)).toEqual({ reserved: true });
    expect(await fundsOf(use(), owner.accountId)).toEqual({ balance: 1, held: 0 });
  });

  it('lets concurrent creates through two keys of one account hold no more than its balance', async () => {
    const fx = use();
    const owner = await fx.seed({ credits: 30 });
    const second = `key_${owner.keyId}_2`;
    await fx.accounts.createKey({ id: second, accountId: owner.accountId, hash: `h_${second}`, prefix: second.slice(0, 11), enabled: true, rateLimit: null, concurrency: null });
    const made = await Promise.all(
      Array.from({ length: 24 }, (_, i) => fx.tasks.createWithinLimit(fx.task({ accountId: owner.accountId, keyId: i % 2 ? second : owner.keyId }, { hold: 3 }), 100)),
    );
    expect(made.filter((m) => m.created)).toHaveLength(10);
    expect(made.filter((m) => !m.created).every((m) => !m.created && m.reason === 'insufficient_credits')).toBe(true);
    expect(await fundsOf(fx, owner.accountId)).toEqual({ balance: 30, held: 30 });
  });

  it('spends credits outside tasks only from what their holds leave', async () => {
    const { tasks, accounts, seed, task } = use();
    const owner = await seed({ credits: 10 });
    await tasks.createWithinLimit(task(owner, { hold: 7 }), 100);
    expect(await accounts.spendCredits(owner.accountId, 4, 'openai_speech')).toBeNull();
    expect((await accounts.spendCredits(owner.accountId, 3, 'openai_speech'))?.balance).toBe(7);
    expect(await fundsOf(use(), owner.accountId)).toEqual({ balance: 7, held: 7 });
    expect((await accounts.ledger(owner.accountId, 1))[0]).toMatchObject({ amount: -3, reason: 'openai_speech', taskId: null });
  });

  it("keeps each account's held exact through a seeded mix of store methods and raw SQL", async () => {
    const fx = use();
    const { db, tasks, seed, task } = fx;
    const owners = [await seed({ credits: 1_000_000 }), await seed({ credits: 1_000_000 })];
    const next = random(24_112_026);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!;
    const ids: string[] = [];
    const someId = () => (ids.length ? pick(ids) : 'no-such-task');
    const now = () => Date.now();
    const steps: Array<[string, () => Promise<unknown>]> = [
      ['createWithinLimit', async () => {
        const made = await tasks.createWithinLimit(task(pick(owners), { hold: Math.floor(next() * 5) }), 1_000);
        if (made.created) ids.push(made.task.id);
      }],
      ['create', async () => ids.push((await tasks.create(task(pick(owners), { hold: Math.floor(next() * 5) }))).id)],
      ['reserve', () => tasks.reserve(someId(), Math.floor(next() * 9))],
      ['markRunning', () => tasks.markRunning(someId(), now())],
      // A task put back to queued by raw SQL after its charge meets the ledger's unique (task, reason): refused, rolled back.
      ['completeSuccess', () => tasks.completeSuccess(someId(), { result: {}, engine: 'e', price: 1 }, now()).catch(() => false)],
      ['completeFailure', () => tasks.completeFailure(someId(), 'boom', now())],
      ['delete', () => tasks.delete(someId())],
      ['raw update state', () => sql`update tasks set state = ${pick(STATES)} where id = ${someId()}`.execute(db)],
      ['raw update hold', () => sql`update tasks set hold = ${Math.floor(next() * 6)} where id = ${someId()}`.execute(db)],
      ['raw move account', () => sql`update tasks set account_id = ${pick(owners).accountId}, hold = hold + 1 where id = ${someId()}`.execute(db)],
      ['raw requeue failed', () => sql`update tasks set state = 'queued' where account_id = ${pick(owners).accountId} and state = 'failed'`.execute(db)],
      ['raw delete', () => sql`delete from tasks where id = ${someId()}`.execute(db)],
    ];
    const done = new Set<string>();
    const accountIds = owners.map((o) => o.accountId);
    for (let i = 0; i < 300; i++) {
      const [name, step] = pick(steps);
      await step();
      done.add(name);
      if (i % 50 === 49) await expectHeldExact(fx, accountIds, `after step ${i} (${name})`);
    }
    await expectHeldExact(fx, accountIds, 'at the end');
    expect(done).toEqual(new Set(steps.map(([name]) => name)));
    if (fx.backend.dialect === 'postgres') {
      await sql`truncate tasks cascade`.execute(db);
      for (const a of accountIds) expect((await fundsOf(fx, a)).held).toBe(0);
    }
  });
}
