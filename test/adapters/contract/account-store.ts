import { expect, it } from 'vitest';
import { hashApiKey } from '../../../src/services/auth.js';
import type { StoreFixture } from '../store-contract.js';

/** Account store behaviour, one caller at a time. */
export function accountStoreContract(use: () => StoreFixture): void {
  it('creates accounts with a ledger row for initial credits only when there are some', async () => {
    const { accounts } = use();
    const rich = await accounts.createAccount('acct_rich', 2 ** 40);
    expect(rich).toEqual({ id: 'acct_rich', status: 'active', balance: 2 ** 40, held: 0, createdAt: expect.any(Number) });
    expect(await accounts.getAccount('acct_rich')).toEqual(rich);
    expect(await accounts.ledger('acct_rich', 10)).toEqual([
      { id: expect.any(Number), accountId: 'acct_rich', taskId: null, amount: 2 ** 40, reason: 'initial_credits', createdAt: rich.createdAt },
    ]);
    await accounts.createAccount('acct_empty', 0);
    expect(await accounts.ledger('acct_empty', 10)).toEqual([]);
    expect(await accounts.getAccount('acct_none')).toBeNull();
    await expect(accounts.createAccount('acct_rich', 1)).rejects.toThrow();
  });

  it('suspends and resumes accounts', async () => {
    const { accounts } = use();
    await accounts.createAccount('acct_s', 5);
    expect(await accounts.setAccountStatus('acct_s', 'suspended')).toBe(true);
    expect((await accounts.getAccount('acct_s'))!.status).toBe('suspended');
    expect(await accounts.setAccountStatus('acct_s', 'active')).toBe(true);
    expect((await accounts.getAccount('acct_s'))!.status).toBe('active');
    expect(await accounts.setAccountStatus('acct_none', 'suspended')).toBe(false);
  });

  it('stores keys by hash: lookup with its account, by prefix without the hash, enable and disable', async () => {
    const { accounts } = use();
    await accounts.createAccount('acct_k', 42);
    const hash = hashApiKey('sk_test_one');
    const created = await accounts.createKey({ id: 'key_one', accountId: 'acct_k', hash, prefix: 'sk_test_one', enabled: true, rateLimit: 2.5, concurrency: 3 });
    expect(created).toEqual({ id: 'key_one', accountId: 'acct_k', prefix: 'sk_test_one', enabled: true, rateLimit: 2.5, concurrency: 3, createdAt: expect.any(Number) });
    await accounts.createKey({ id: 'key_two', accountId: 'acct_k', hash: hashApiKey('sk_test_two'), prefix: 'sk_test_one', enabled: false, rateLimit: null, concurrency: null });

    const full = { ...created, hash };
    expect(await accounts.findKeyByHash(hash)).toEqual(full);
    expect(await accounts.findKeyByHash(hashApiKey('sk_unknown'))).toBeNull();
    const withAccount = await accounts.findKeyWithAccount(hash);
    expect(withAccount).toEqual({ key: full, account: { id: 'acct_k', status: 'active', balance: 42, held: 0, createdAt: expect.any(Number) } });
    expect(await accounts.findKeyWithAccount(hashApiKey('sk_unknown'))).toBeNull();

    const byPrefix = await accounts.findKeyByPrefix('sk_test_one');
    expect(byPrefix.map((k) => k.id).sort()).toEqual(['key_one', 'key_two']);
    expect(byPrefix.find((k) => k.id === 'key_two')).toEqual({
      id: 'key_two', accountId: 'acct_k', prefix: 'sk_test_one', enabled: false, rateLimit: null, concurrency: null, createdAt: expect.any(Number),
    });
    for (const k of byPrefix) expect(k).not.toHaveProperty('hash');
    expect(await accounts.findKeyByPrefix('SK_TEST_ONE')).toEqual([]); // exact match, case included

    expect(await accounts.setKeyEnabled('key_one', false)).toBe(true);
    expect((await accounts.findKeyByHash(hash))!.enabled).toBe(false);
    expect(await accounts.setKeyEnabled('key_one', true)).toBe(true);
    expect((await accounts.findKeyWithAccount(hash))!.key.enabled).toBe(true);
    expect(await accounts.setKeyEnabled('key_none', true)).toBe(false);
  });

  it('lists accounts and keys newest first, keys without their hashes', async () => {
    const { accounts } = use();
    const older = await accounts.createAccount('acct_list_a', 1);
    await new Promise((r) => setTimeout(r, 5));
    await accounts.createAccount('acct_list_b', 2);
    await accounts.createKey({ id: 'key_list_1', accountId: older.id, hash: hashApiKey('sk_list_1'), prefix: 'sk_list_1', enabled: true, rateLimit: null, concurrency: 4 });
    await new Promise((r) => setTimeout(r, 5));
    await accounts.createKey({ id: 'key_list_2', accountId: 'acct_list_b', hash: hashApiKey('sk_list_2'), prefix: 'sk_list_2', enabled: false, rateLimit: 1.5, concurrency: null });
    expect((await accounts.listAccounts(10)).map((a) => [a.id, a.balance])).toEqual([['acct_list_b', 2], ['acct_list_a', 1]]);
    expect((await accounts.listAccounts(1)).map((a) => a.id)).toEqual(['acct_list_b']);
    const keys = await accounts.listKeys(10);
    expect(keys).toEqual([
      { id: 'key_list_2', accountId: 'acct_list_b', prefix: 'sk_list_2', enabled: false, rateLimit: 1.5, concurrency: null, createdAt: expect.any(Number) },
      { id: 'key_list_1', accountId: 'acct_list_a', prefix: 'sk_list_1', enabled: true, rateLimit: null, concurrency: 4, createdAt: expect.any(Number) },
    ]);
    for (const k of keys) expect(k).not.toHaveProperty('hash');
  });

  it('refuses a second key with the same hash', async () => {
    const { accounts } = use();
    await accounts.createAccount('acct_d', 0);
    const key = { accountId: 'acct_d', hash: hashApiKey('sk_dup'), prefix: 'sk_dup', enabled: true, rateLimit: null, concurrency: null };
    await accounts.createKey({ id: 'key_d1', ...key });
    await expect(accounts.createKey({ id: 'key_d2', ...key })).rejects.toThrow();
  });

  it('adjusts credits with a ledger row per change, never below zero, newest ledger rows first', async () => {
    const { accounts } = use();
    await accounts.createAccount('acct_c', 10);
    expect((await accounts.adjustCredits('acct_c', 5, 'admin_credit')).balance).toBe(15);
    expect((await accounts.adjustCredits('acct_c', -4, 'refund_reversal')).balance).toBe(11);
    expect((await accounts.adjustCredits('acct_c', -100, 'wipe')).balance).toBe(0);
    expect((await accounts.getAccount('acct_c'))!.balance).toBe(0);
    await expect(accounts.adjustCredits('acct_none', 1, 'x')).rejects.toThrow('no account acct_none');

    const ledger = await accounts.ledger('acct_c', 10);
    // The recorded amount is what actually changed: -11, not the -100 asked for.
    expect(ledger.map((e) => [e.reason, e.amount])).toEqual([
      ['wipe', -11],
      ['refund_reversal', -4],
      ['admin_credit', 5],
      ['initial_credits', 10],
    ]);
    expect(ledger.map((e) => e.id)).toEqual([...ledger.map((e) => e.id)].sort((a, b) => b - a));
    expect((await accounts.ledger('acct_c', 2)).map((e) => e.reason)).toEqual(['wipe', 'refund_reversal']);
  });
}
