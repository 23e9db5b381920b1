import { expect, it } from 'vitest';
import type { StoreFixture } from '../store-contract.js';
import { runNodes } from './processes.js';

/** What must hold when several callers, connections or processes act at once. */
export function concurrencyContract(use: () => StoreFixture): void {
  it('completeSuccess called twice at once charges exactly once', async () => {
    const { tasks, accounts, seed, task } = use();
    const owner = await seed({ credits: 100 });
    const t = await tasks.create(task(owner));
    await tasks.markRunning(t.id, Date.now());
    const outcome = { result: { ok: true }, engine: 'e', price: 40 };
    const results = await Promise.all([tasks.completeSuccess(t.id, outcome, Date.now()), tasks.completeSuccess(t.id, outcome, Date.now())]);
    expect(results.sort()).toEqual([false, true]);
    expect((await accounts.getAccount(owner.accountId))!.balance).toBe(60);
    expect((await accounts.ledger(owner.accountId, 10)).filter((e) => e.reason === 'task_charge')).toEqual([
      expect.objectContaining({ taskId: t.id, amount: -40 }),
    ]);
  });

  it('tasks of one account completing at once never take the balance below zero', async () => {
    const { tasks, accounts, seed, task } = use();
    const owner = await seed({ credits: 25 });
    const made = await Promise.all(Array.from({ length: 4 }, () => tasks.create(task(owner))));
    const results = await Promise.all(made.map((t) => tasks.completeSuccess(t.id, { result: {}, engine: 'e', price: 10 }, Date.now())));
    expect(results).toEqual([true, true, true, true]);
    expect((await accounts.getAccount(owner.accountId))!.balance).toBe(0);
    const charged = await Promise.all(made.map(async (t) => (await tasks.get(t.id))!.charged!));
    expect(charged.sort((a, b) => a - b)).toEqual([0, 5, 10, 10]);
    const charges = (await accounts.ledger(owner.accountId, 10)).filter((e) => e.reason === 'task_charge');
    expect(charges.reduce((sum, e) => sum + e.amount, 0)).toBe(-25);
  });

  it('credit adjustments at once all count (no lost update)', async () => {
    const { accounts } = use();
    await accounts.createAccount('acct_many', 0);
    await Promise.all(Array.from({ length: 20 }, () => accounts.adjustCredits('acct_many', 3, 'admin_credit')));
    expect((await accounts.getAccount('acct_many'))!.balance).toBe(60);
    expect(await accounts.ledger('acct_many', 100)).toHaveLength(20);
  });

  it('50 concurrent creates with a limit of 5 create exactly 5', async () => {
    const { tasks, seed, task } = use();
    const owner = await seed();
    const outcomes = await Promise.all(Array.from({ length: 50 }, () => tasks.createWithinLimit(task(owner), 5)));
    expect(outcomes.filter((o) => o.created)).toHaveLength(5);
    expect(outcomes.filter((o) => !o.created).every((o) => !o.created && o.reason === 'unfinished_limit')).toBe(true);
    expect(await tasks.countUnfinishedForKey(owner.keyId, 100)).toBe(5);
  });

  it('creates from several processes at once respect the limit too', async () => {
    const { backend, location, db, tasks, seed } = use();
    const owner = await seed();
    // With the hot paths the children create off Kysely, each create writing its job row as well.
    const path = backend.openHotPaths ? ['hot'] : [];
    const answers = await runNodes(backend.dialect, location, [1, 2, 3].map(() => ['create', owner.keyId, owner.accountId, '5', '10', ...path]));
    expect(answers).toEqual([1, 2, 3].map(() => ({ created: expect.any(Number), refused: expect.any(Number) })));
    const created = (answers as { created: number }[]).reduce((sum, a) => sum + a.created, 0);
    expect(created).toBe(5);
    expect(await tasks.countUnfinishedForKey(owner.keyId, 100)).toBe(5);
    const jobs = await db.selectFrom('jobs').innerJoin('tasks', 'tasks.id', 'jobs.task_id').select('jobs.task_id').where('tasks.api_key_id', '=', owner.keyId).execute();
    expect(jobs).toHaveLength(backend.openHotPaths ? 5 : 0);
  }, 60_000);

  it('migrations run from several processes at once on a new database, and again on an existing one', async () => {
    const { backend } = use();
    const fresh = await backend.createDatabase();
    const answers = await runNodes(backend.dialect, fresh, [['migrate'], ['migrate'], ['migrate']]);
    expect(answers).toEqual([1, 2, 3].map(() => ({ applied: ['0001_initial', '0002_webhooks', '0003_key_unfinished', '0004_holds'] })));
    const again = await backend.open(fresh);
    try {
      const applied = await again.withTables<{ kysely_migration: { name: string } }>().selectFrom('kysely_migration').select('name').execute();
      expect(applied).toEqual([{ name: '0001_initial' }, { name: '0002_webhooks' }, { name: '0003_key_unfinished' }, { name: '0004_holds' }]);
      await expect(again.selectFrom('ledger').select('id').execute()).resolves.toEqual([]);
    } finally {
      await again.destroy();
    }
  }, 60_000);
}
