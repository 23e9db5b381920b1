export type AccountStatus = 'active' | 'suspended';

export interface Account {
  id: string;
  status: AccountStatus;
  balance: number;
  /** What the account's unfinished tasks hold of the balance (docs/api.md "Billing"): not available to new work. */
  held: number;
  createdAt: number;
}

export interface ApiKey {
  id: string;
  accountId: string;
  /** First characters of the key, for humans to recognise it; the key itself is never stored. */
  prefix: string;
  enabled: boolean;
  /** Requests per second; null means the server default. */
  rateLimit: number | null;
  /** Unfinished tasks and in-flight requests; null means the server default. */
  concurrency: number | null;
  createdAt: number;
}

export interface LedgerEntry {
  id: number;
  accountId: string;
  taskId: string | null;
  amount: number;
  reason: string;
  createdAt: number;
}

export interface AccountStore {
  createAccount(id: string, initialCredits: number): Promise<Account>;
  getAccount(id: string): Promise<Account | null>;
  setAccountStatus(id: string, status: AccountStatus): Promise<boolean>;
  createKey(key: Omit<ApiKey, 'createdAt'> & { hash: string }): Promise<ApiKey>;
  /** Looks a key up by its hash (an index lookup); the caller compares in constant time. */
  findKeyByHash(hash: string): Promise<(ApiKey & { hash: string }) | null>;
  /** The key and its account in one lookup (the hot path of every authenticated request). */
  findKeyWithAccount(hash: string): Promise<{ key: ApiKey & { hash: string }; account: Account } | null>;
  findKeyByPrefix(prefix: string): Promise<ApiKey[]>;
  setKeyEnabled(keyId: string, enabled: boolean): Promise<boolean>;
  /** Adds (or with a negative amount removes) credits, writing a ledger row; never below zero. */
  adjustCredits(accountId: string, amount: number, reason: string): Promise<Account>;
  /**
   * Takes exactly `amount` credits, writing a ledger row, if the balance less what the account's unfinished tasks
   * hold covers it (docs/api.md "Billing"); else takes nothing and answers null. Checked and taken atomically.
   */
  spendCredits(accountId: string, amount: number, reason: string): Promise<Account | null>;
  ledger(accountId: string, limit: number): Promise<LedgerEntry[]>;
  /** Accounts, newest first (the admin page). */
  listAccounts(limit: number): Promise<Account[]>;
  /** Keys, newest first, never with their hashes (the admin page). */
  listKeys(limit: number): Promise<ApiKey[]>;
}
