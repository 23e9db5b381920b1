import pino from 'pino';
import { expect, it } from 'vitest';
import { SqlJobQueue } from '../../../src/adapters/sql/queue.js';
import { SqlTaskStore } from '../../../src/adapters/sql/task-store.js';
import type { StoreFixture } from '../store-contract.js';

/** Task store behaviour, one caller at a time. */
export function taskStoreContract(use: () => StoreFixture): void {
  it('creates and reads a task back, params JSON intact and numbers as numbers', async () => {
    const { tasks, seed, task } = use();
    const owner = await seed();
    const params = {
      text: 'Grüße, 日本語, emoji 🎧, quote " and backslash \\ and NUL \u0000',
      nested: { list: [1, 2.5, -3, null, true, false, 'x'], empty: {}, big: 2 ** 52 },
      none: null,
    };
    const createdAt = 1_763_900_000_123;
    const input = task(owner, { kind: 'separation', params, createdAt, expiresAt: createdAt + 86_400_000 });
    const created = await tasks.create(input);
    const expected = {
      id: input.id,
      kind: 'separation',
      accountId: owner.accountId,
      apiKeyId: owner.keyId,
      state: 'queued',
      params,
      result: null,
      error: null,
      engine: null,
      progress: 0,
      charged: null,
      createdAt,
      updatedAt: createdAt,
      startedAt: null,
      finishedAt: null,
      expiresAt: createdAt + 86_400_000,
    };
    expect(created).toEqual(expected);
    expect(await tasks.get(input.id)).toEqual(expected);
    expect(await tasks.get('no-such-task')).toBeNull();
    // A query's read (on the hot path's own statement where the store has one): everything but the params,
    // which come on their own when asked.
    const { params: _params, ...queried } = expected;
    const forQuery = await tasks.getForQuery(input.id);
    expect(forQuery).toStrictEqual(queried);
    expect(forQuery).not.toHaveProperty('params');
    expect(await tasks.getParams(input.id)).toStrictEqual(params);
    expect(await tasks.getForQuery('no-such-task')).toBeNull();
    expect(await tasks.getParams('no-such-task')).toBeNull();
  });

  it('sums usage per key: tasks, successes, failures and credits charged (numbers, not bigint strings)', async () => {
    const { tasks, seed, task } = use();
    const a = await seed({ credits: 100 });
    const b = await seed({ credits: 100 });
    const now = Date.now();
    const [ok1, ok2, bad] = await Promise.all([tasks.create(task(a)), tasks.create(task(a)), tasks.create(task(a))]);
    await tasks.create(task(a)); // still queued
    await tasks.create(task(b));
    expect(await tasks.completeSuccess(ok1.id, { result: {}, engine: 'e', price: 3 }, now)).toBe(true);
    expect(await tasks.completeSuccess(ok2.id, { result: {}, engine: 'e', price: 4 }, now)).toBe(true);
    expect(await tasks.completeFailure(bad.id, 'boom', now)).toBe(true);
    const usage = (await tasks.usageByKey()).sort((x, y) => (x.apiKeyId === a.keyId ? -1 : y.apiKeyId === a.keyId ? 1 : 0));
    expect(usage).toEqual([
      { apiKeyId: a.keyId, tasks: 4, succeeded: 2, failed: 1, credits: 7 },
      { apiKeyId: b.keyId, tasks: 1, succeeded: 0, failed: 0, credits: 0 },
    ]);
  });

  it('markRunning and setProgress move a task forward, and never a finished one', async () => {
    const { tasks, seed, task } = use();
    const owner = await seed();
    const t = await tasks.create(task(owner));
    await tasks.setProgress(t.id, 0.5, t.createdAt + 1); // not running yet: ignored
    expect((await tasks.get(t.id))!.progress).toBe(0);

    await tasks.markRunning(t.id, t.createdAt + 10);
    await tasks.setProgress(t.id, 0.25, t.createdAt + 20);
    let got = (await tasks.get(t.id))!;
    expect(got).toMatchObject({ state: 'running', startedAt: t.createdAt + 10, updatedAt: t.createdAt + 20, progress: 0.25 });
    await tasks.setProgress(t.id, 7, t.createdAt + 30);
    expect((await tasks.get(t.id))!.progress).toBe(1);
    await tasks.setProgress(t.id, -1, t.createdAt + 31);
    expect((await tasks.get(t.id))!.progress).toBe(0);

    expect(await tasks.completeFailure(t.id, 'boom', t.createdAt + 40)).toBe(true);
    await tasks.markRunning(t.id, t.createdAt + 50);
    await tasks.setProgress(t.id, 0.9, t.createdAt + 60);
    got = (await tasks.get(t.id))!;
    expect(got).toMatchObject({ state: 'failed', error: 'boom', finishedAt: t.createdAt + 40, updatedAt: t.createdAt + 40 });
    expect(await tasks.completeFailure(t.id, 'again', t.createdAt + 70)).toBe(false);
    expect(await tasks.completeFailure('no-such-task', 'x', t.createdAt)).toBe(false);
  });

  it('completeSuccess stores the result, charges once, and later completions change nothing', async () => {
    const { tasks, accounts, seed, task } = use();
    const owner = await seed({ credits: 100 });
    const t = await tasks.create(task(owner));
    await tasks.markRunning(t.id, t.createdAt + 1);
    const result = { files: [{ key: `tasks/${t.id}/out.mp3`, seconds: 12.5 }], note: 'ünïcode' };
    expect(await tasks.completeSuccess(t.id, { result, engine: 'piper', price: 30 }, t.createdAt + 2)).toBe(true);
    expect(await tasks.get(t.id)).toMatchObject({ state: 'success', result, engine: 'piper', charged: 30, progress: 1, finishedAt: t.createdAt + 2 });
    expect((await accounts.getAccount(owner.accountId))!.balance).toBe(70);

    expect(await tasks.completeSuccess(t.id, { result: {}, engine: 'other', price: 30 }, t.createdAt + 3)).toBe(false);
    expect(await tasks.completeFailure(t.id, 'late failure', t.createdAt + 4)).toBe(false);
    expect(await tasks.get(t.id)).toMatchObject({ state: 'success', result, error: null, charged: 30, finishedAt: t.createdAt + 2 });
    expect((await accounts.getAccount(owner.accountId))!.balance).toBe(70);
    const charges = (await accounts.ledger(owner.accountId, 10)).filter((e) => e.reason === 'task_charge');
    expect(charges).toEqual([expect.objectContaining({ taskId: t.id, amount: -30, createdAt: t.createdAt + 2 })]);
    expect(await tasks.completeSuccess('no-such-task', { result: {}, engine: 'x', price: 1 }, t.createdAt)).toBe(false);
  });

  it('a balance lower than the price ends at zero, never below', async () => {
    const { tasks, accounts, seed, task } = use();
    const owner = await seed({ credits: 3 });
    const t = await tasks.create(task(owner));
    expect(await tasks.completeSuccess(t.id, { result: {}, engine: 'e', price: 10 }, Date.now())).toBe(true);
    expect((await tasks.get(t.id))!.charged).toBe(3);
    expect((await accounts.getAccount(owner.accountId))!.balance).toBe(0);
    const free = await tasks.create(task(owner));
    expect(await tasks.completeSuccess(free.id, { result: {}, engine: 'e', price: 10 }, Date.now())).toBe(true);
    expect((await tasks.get(free.id))!.charged).toBe(0);
    expect((await accounts.getAccount(owner.accountId))!.balance).toBe(0);
  });

  it('lists newest first with state, kind and limit filters; equal times in id order', async () => {
    const { tasks, seed, task } = use();
    const owner = await seed();
    const base = 1_763_900_000_000;
    const ids = ['t-c', 't-a', 't-b'];
    for (const id of ids) await tasks.create(task(owner, { id, createdAt: base }));
    await tasks.create(task(owner, { id: 't-new', kind: 'enhance', createdAt: base + 5 }));
    await tasks.create(task(owner, { id: 't-old', createdAt: base - 5 }));
    await tasks.markRunning('t-b', base + 6);

    expect((await tasks.list({ limit: 10 })).map((t) => t.id)).toEqual(['t-new', 't-a', 't-b', 't-c', 't-old']);
    expect((await tasks.list({ limit: 2 })).map((t) => t.id)).toEqual(['t-new', 't-a']);
    expect((await tasks.list({ limit: 10, state: 'running' })).map((t) => t.id)).toEqual(['t-b']);
    expect((await tasks.list({ limit: 10, kind: 'enhance' })).map((t) => t.id)).toEqual(['t-new']);
    expect(await tasks.list({ limit: 10, kind: 'enhance', state: 'running' })).toEqual([]);
  });

  it('listExpired returns what expired by now, soonest first, up to the limit; delete removes it', async () => {
    const { tasks, seed, task } = use();
    const owner = await seed();
    const now = 1_763_900_000_000;
    await tasks.create(task(owner, { id: 'x-later', expiresAt: now + 1 }));
    await tasks.create(task(owner, { id: 'x-exact', expiresAt: now }));
    await tasks.create(task(owner, { id: 'x-first', expiresAt: now - 100 }));
    await tasks.create(task(owner, { id: 'x-second', expiresAt: now - 50 }));

    expect((await tasks.listExpired(now, 10)).map((t) => t.id)).toEqual(['x-first', 'x-second', 'x-exact']);
    expect((await tasks.listExpired(now, 1)).map((t) => t.id)).toEqual(['x-first']);
    await tasks.delete('x-first');
    await tasks.delete('no-such-task');
    expect(await tasks.get('x-first')).toBeNull();
    expect((await tasks.listExpired(now, 10)).map((t) => t.id)).toEqual(['x-second', 'x-exact']);
  });

  it('listExpired leaves running tasks out; a task finishing past its expiry is kept min(its TTL, an hour) after', async () => {
    const { tasks, seed, task } = use();
    const owner = await seed();
    const now = Date.now();
    await tasks.create(task(owner, { id: 'e-run', createdAt: now - 120_000, expiresAt: now - 60_000 }));
    await tasks.markRunning('e-run', now);
    await tasks.create(task(owner, { id: 'e-week', createdAt: now - 8 * 86_400_000, expiresAt: now - 86_400_000 }));
    await tasks.markRunning('e-week', now);
    await tasks.create(task(owner, { id: 'e-queued', createdAt: now - 120_000, expiresAt: now - 60_000 }));
    expect((await tasks.listExpired(now, 10)).map((t) => t.id)).toEqual(['e-queued']);
    expect(await tasks.completeSuccess('e-run', { result: {}, engine: 'e', price: 0 }, now)).toBe(true);
    expect(await tasks.completeFailure('e-week', 'boom', now)).toBe(true);
    expect((await tasks.get('e-run'))?.expiresAt).toBe(now + 60_000);
    expect((await tasks.get('e-week'))?.expiresAt).toBe(now + 3_600_000);
    expect((await tasks.listExpired(now, 10)).map((t) => t.id)).toEqual(['e-queued']);
  });

  it('counts unfinished tasks per key, up to the asked bound', async () => {
    const { tasks, seed, task } = use();
    const owner = await seed();
    const other = await seed();
    const made = [];
    for (let i = 0; i < 4; i++) made.push(await tasks.create(task(owner)));
    await tasks.create(task(other));
    await tasks.markRunning(made[0]!.id, Date.now());
    await tasks.completeFailure(made[1]!.id, 'x', Date.now());
    expect(await tasks.countUnfinishedForKey(owner.keyId, 10)).toBe(3);
    expect(await tasks.countUnfinishedForKey(owner.keyId, 2)).toBe(2);
    expect(await tasks.countUnfinishedForKey('key_none', 10)).toBe(0);
  });

  it('createWithinLimit creates up to the limit, refuses beyond it, and counts only unfinished tasks', async () => {
    const { tasks, seed, task } = use();
    const owner = await seed();
    const first = await tasks.createWithinLimit(task(owner), 2);
    expect(first).toEqual({ created: true, task: expect.objectContaining({ state: 'queued', apiKeyId: owner.keyId }) });
    expect((await tasks.createWithinLimit(task(owner), 2)).created).toBe(true);
    const refused = task(owner);
    expect(await tasks.createWithinLimit(refused, 2)).toEqual({ created: false, reason: 'unfinished_limit' });
    expect(await tasks.get(refused.id)).toBeNull();
    expect(await tasks.createWithinLimit(task(owner), 0)).toEqual({ created: false, reason: 'unfinished_limit' });
    expect(await tasks.createWithinLimit(task(owner), -1)).toEqual({ created: false, reason: 'unfinished_limit' });

    if (!first.created) throw new Error('unreachable');
    await tasks.completeFailure(first.task.id, 'done', Date.now());
    expect((await tasks.createWithinLimit(task(owner), 2)).created).toBe(true);
    expect((await tasks.createWithinLimit(task(await seed()), 2)).created).toBe(true); // another key has its own count
  });

  it('createWithinLimit writes the job in the same transaction when the queue is in this database: both or neither', async () => {
    const { db, seed, task } = use();
    const owner = await seed();
    const queue = new SqlJobQueue(db, { pollIntervalMs: 60_000, logger: pino({ level: 'silent' }) });
    const store = new SqlTaskStore(db, { alsoEnqueue: queue.enqueueWithin });
    const made = await store.createWithinLimit(task(owner), 5);
    if (!made.created) throw new Error('expected the task to be created');
    expect(await queue.position({ taskId: made.task.id, kind: 'tts' })).toBe(1);

    const failing = new SqlTaskStore(db, {
      async alsoEnqueue(trx, job) {
        await queue.enqueueWithin(trx, job);
        throw new Error('disk full');
      },
    });
    const broken = task(owner);
    await expect(failing.createWithinLimit(broken, 5)).rejects.toThrow('disk full');
    expect(await store.get(broken.id)).toBeNull();
    expect(await queue.position({ taskId: broken.id, kind: 'tts' })).toBeNull();
    expect(await store.countUnfinishedForKey(owner.keyId, 10)).toBe(1);
  });

  it('answers ping', async () => {
    await expect(use().tasks.ping()).resolves.toBeUndefined();
  });
}
