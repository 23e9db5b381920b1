import type { Account, AccountStatus, AccountStore, ApiKey, LedgerEntry } from '../ports/accounts.js';

type Found = { key: ApiKey & { hash: string }; account: Account };

export interface KeyCacheOptions {
  /** How long a found key (and its account) is served from memory. */
  ttlMs: number;
  /** Entries kept at most; the oldest goes first. */
  maxEntries?: number;
  now?: () => number;
}

/**
 * Every authenticated request looked its key up in the database (profiled: a quarter of a task query's
 * SQL work). This keeps found keys, with their account, for `ttlMs`.
 *
 * The bound on staleness: a change made through this store (the server's own admin paths, tests), or
 * announced with forget() (a charge by this process's workers: that account's keys only), clears the cache at once; a change made
 * elsewhere (the admin CLI on the same database, another API node, a worker process) is seen within `ttlMs`. So a disabled key or a suspended account is
 * refused at most `ttlMs` late, and the credit pre-check at create may read a balance that old (the
 * charge itself is taken from the database at completion, never below zero, once).
 *
 * Unknown keys are not cached: a key created a moment ago in another process works at once, and
 * guessed keys cannot fill the map.
 */
export class CachedAccountStore implements AccountStore {
  private readonly found = new Map<string, { at: number; value: Found }>();
  /**
   * The cached hashes of each account: a charge forgets its account's keys only. Clearing every key at each
   * charge made ROLE=all's creates miss the cache whenever its workers finished tasks (a few dozen a second
   * under load): the key and account read through Kysely again, 8% of a create's loop CPU (bench/results/http.md E).
   */
  private readonly byAccount = new Map<string, Set<string>>();
  /** Counts writes through this store: a lookup that overlapped one must not cache what it read. */
  private writes = 0;
  private readonly maxEntries: number;
  private readonly now: () => number;

  constructor(
    private readonly inner: AccountStore,
    private readonly opts: KeyCacheOptions,
  ) {
    this.maxEntries = opts.maxEntries ?? 10_000;
    this.now = opts.now ?? Date.now;
  }

  async findKeyWithAccount(hash: string): Promise<Found | null> {
    const now = this.now();
    const hit = this.found.get(hash);
    if (hit && now - hit.at < this.opts.ttlMs) return hit.value;
    const writes = this.writes;
    const value = await this.inner.findKeyWithAccount(hash);
    if (writes !== this.writes) return value;
    this.drop(hash);
    if (!value) return null;
    // Re-inserted, so that Map order is age order and the first entry is the oldest.
    if (this.found.size >= this.maxEntries) this.drop(this.found.keys().next().value!);
    this.found.set(hash, { at: now, value });
    const hashes = this.byAccount.get(value.account.id);
    if (hashes) hashes.add(hash);
    else this.byAccount.set(value.account.id, new Set([hash]));
    return value;
  }

  private drop(hash: string): void {
    const entry = this.found.get(hash);
    if (!entry) return;
    this.found.delete(hash);
    const accountId = entry.value.account.id;
    const hashes = this.byAccount.get(accountId);
    hashes?.delete(hash);
    if (hashes?.size === 0) this.byAccount.delete(accountId);
  }

  createAccount(id: string, initialCredits: number): Promise<Account> {
    return this.inner.createAccount(id, initialCredits);
  }

  getAccount(id: string): Promise<Account | null> {
    return this.inner.getAccount(id);
  }

  async setAccountStatus(id: string, status: AccountStatus): Promise<boolean> {
    return this.changed(await this.inner.setAccountStatus(id, status));
  }

  createKey(key: Omit<ApiKey, 'createdAt'> & { hash: string }): Promise<ApiKey> {
    return this.inner.createKey(key);
  }

  findKeyByHash(hash: string): Promise<(ApiKey & { hash: string }) | null> {
    return this.inner.findKeyByHash(hash);
  }

  findKeyByPrefix(prefix: string): Promise<ApiKey[]> {
    return this.inner.findKeyByPrefix(prefix);
  }

  async setKeyEnabled(keyId: string, enabled: boolean): Promise<boolean> {
    return this.changed(await this.inner.setKeyEnabled(keyId, enabled));
  }

  async adjustCredits(accountId: string, amount: number, reason: string): Promise<Account> {
    return this.changed(await this.inner.adjustCredits(accountId, amount, reason));
  }

  async spendCredits(accountId: string, amount: number, reason: string): Promise<Account | null> {
    const spent = await this.inner.spendCredits(accountId, amount, reason);
    if (spent) this.forget(accountId);
    return spent;
  }

  ledger(accountId: string, limit: number): Promise<LedgerEntry[]> {
    return this.inner.ledger(accountId, limit);
  }

  listAccounts(limit: number): Promise<Account[]> {
    return this.inner.listAccounts(limit);
  }

  listKeys(limit: number): Promise<ApiKey[]> {
    return this.inner.listKeys(limit);
  }

  /**
   * Drops what is cached, for a change made in this process outside this store (a worker here charging a
   * task's credits): the keys of `accountId`, or every key without one. A lookup running meanwhile (of any
   * account: it cannot know which it will find) does not cache what it read.
   */
  forget(accountId?: string): void {
    this.writes++;
    if (accountId === undefined) {
      this.found.clear();
      this.byAccount.clear();
      return;
    }
    for (const hash of this.byAccount.get(accountId) ?? []) this.drop(hash);
  }

  /** After a write: everything cached may be the old row (writes are admin actions, rare: clear all). */
  private changed<T>(result: T): T {
    this.forget();
    return result;
  }
}
