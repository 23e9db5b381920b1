import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CachedAccountStore } from '../../src/adapters/cached-account-store.js';
import { SqlAccountStore } from '../../src/adapters/sql/account-store.js';
import type { Database } from '../../src/adapters/sql/schema.js';
import { openSqlite } from '../../src/adapters/sqlite/database.js';
import { hashApiKey, issueApiKey } from '../../src/services/auth.js';

/**
 * The key cache on a real SQLite file. `other` stands for another process on the same database (the
 * admin CLI, a worker charging credits): what it changes is only seen once the TTL has passed.
 */
let dir: string;
let db: Kysely<Database>;
let other: SqlAccountStore;
let clock = 0;
const TTL = 1000;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'soundry-keycache-'));
  db = await openSqlite(join(dir, 'soundry.db'));
  other = new SqlAccountStore(db);
});
afterAll(async () => {
  await db.destroy();
  await rm(dir, { recursive: true, force: true });
});

function cached(maxEntries?: number) {
  return new CachedAccountStore(new SqlAccountStore(db), { ttlMs: TTL, now: () => clock, maxEntries });
}

describe('CachedAccountStore', () => {
  it('serves a found key from memory until the TTL, then reads the change made elsewhere', async () => {
    const store = cached();
    const { apiKey, key } = await issueApiKey(other, { credits: 10, rateLimit: null, concurrency: null });
    const hash = hashApiKey(apiKey);
    clock = 10_000;
    expect((await store.findKeyWithAccount(hash))?.key.enabled).toBe(true);
    await other.setKeyEnabled(key.id, false);
    clock += TTL - 1;
    expect((await store.findKeyWithAccount(hash))?.key.enabled).toBe(true); // the documented bound
    clock += 1;
    expect((await store.findKeyWithAccount(hash))?.key.enabled).toBe(false);
  });

  it('applies changes made through itself at once: key, account status, credits', async () => {
    const store = cached();
    const { apiKey, key, account } = await issueApiKey(other, { credits: 10, rateLimit: null, concurrency: null });
    const hash = hashApiKey(apiKey);
    clock = 50_000;
    expect(await store.findKeyWithAccount(hash)).toMatchObject({ key: { enabled: true }, account: { status: 'active', balance: 10 } });
    await store.setKeyEnabled(key.id, false);
    expect((await store.findKeyWithAccount(hash))?.key.enabled).toBe(false);
    await store.setAccountStatus(account.id, 'suspended');
    expect((await store.findKeyWithAccount(hash))?.account.status).toBe('suspended');
    await store.adjustCredits(account.id, -10, 'test');
    expect((await store.findKeyWithAccount(hash))?.account.balance).toBe(0);
  });

  it('forget() drops what is cached: a charge by the process\'s own workers is seen by the next create', async () => {
    const store = cached();
    const { apiKey, account } = await issueApiKey(other, { credits: 10, rateLimit: null, concurrency: null });
    const hash = hashApiKey(apiKey);
    clock = 70_000;
    expect((await store.findKeyWithAccount(hash))?.account.balance).toBe(10);
    await other.adjustCredits(account.id, -10, 'charged elsewhere in this process');
    expect((await store.findKeyWithAccount(hash))?.account.balance).toBe(10);
    store.forget(account.id);
    expect((await store.findKeyWithAccount(hash))?.account.balance).toBe(0);
  });

  it('forget(accountId) keeps the other accounts\' keys: a charge does not send every key back to the database', async () => {
    const store = cached();
    const charged = await issueApiKey(other, { credits: 10, rateLimit: null, concurrency: null });
    const secondKey = await issueApiKey(other, { accountId: charged.account.id, credits: 0, rateLimit: null, concurrency: null });
    const bystander = await issueApiKey(other, { credits: 10, rateLimit: null, concurrency: null });
    clock = 80_000;
    for (const k of [charged, secondKey, bystander]) await store.findKeyWithAccount(hashApiKey(k.apiKey));
    await other.adjustCredits(charged.account.id, -4, 'charged elsewhere in this process');
    await other.adjustCredits(bystander.account.id, -4, 'changed elsewhere, not announced');
    store.forget(charged.account.id);
    // Both keys of the charged account read again; the bystander is still served from memory (its TTL bound).
    expect((await store.findKeyWithAccount(hashApiKey(charged.apiKey)))?.account.balance).toBe(6);
    expect((await store.findKeyWithAccount(hashApiKey(secondKey.apiKey)))?.account.balance).toBe(6);
    expect((await store.findKeyWithAccount(hashApiKey(bystander.apiKey)))?.account.balance).toBe(10);
    store.forget();
    expect((await store.findKeyWithAccount(hashApiKey(bystander.apiKey)))?.account.balance).toBe(6);
  });

  it('does not cache unknown keys: a key created elsewhere works at once', async () => {
    const store = cached();
    clock = 90_000;
    const raw = 'sk_created_elsewhere_after_a_miss';
    expect(await store.findKeyWithAccount(hashApiKey(raw))).toBeNull();
    const { account } = await issueApiKey(other, { credits: 1, rateLimit: null, concurrency: null });
    await other.createKey({ id: 'key_elsewhere', accountId: account.id, hash: hashApiKey(raw), prefix: raw.slice(0, 11), enabled: true, rateLimit: null, concurrency: null });
    expect((await store.findKeyWithAccount(hashApiKey(raw)))?.key.id).toBe('key_elsewhere');
  });

  it('keeps at most maxEntries keys, dropping the oldest', async () => {
    const store = cached(2);
    clock = 200_000;
    const keys = [];
    for (let i = 0; i < 3; i++) keys.push(await issueApiKey(other, { credits: 1, rateLimit: null, concurrency: null }));
    for (const k of keys) await store.findKeyWithAccount(hashApiKey(k.apiKey));
    for (const k of keys) await other.setKeyEnabled(k.key.id, false);
    // The first was dropped (read again: disabled); the two newest are still served from memory.
    expect((await store.findKeyWithAccount(hashApiKey(keys[0]!.apiKey)))?.key.enabled).toBe(false);
    expect((await store.findKeyWithAccount(hashApiKey(keys[2]!.apiKey)))?.key.enabled).toBe(true);
  });
});
