import type { Kysely, Selectable } from 'kysely';
import type { Database } from './schema.js';
import { dialectOf, writeTransaction } from './dialect.js';
import type { Account, AccountStatus, AccountStore, ApiKey, LedgerEntry } from '../../ports/accounts.js';

function toAccount(row: Selectable<Database['accounts']>): Account {
  return { id: row.id, status: row.status as AccountStatus, balance: Number(row.balance), held: Number(row.held), createdAt: Number(row.created_at) };
}

function toKey(row: Selectable<Database['api_keys']>): ApiKey & { hash: string } {
  return {
    id: row.id,
    accountId: row.account_id,
    hash: row.hash,
    prefix: row.prefix,
    enabled: Boolean(row.enabled),
    rateLimit: row.rate_limit === null ? null : Number(row.rate_limit),
    concurrency: row.concurrency === null ? null : Number(row.concurrency),
    createdAt: Number(row.created_at),
  };
}

export class SqlAccountStore implements AccountStore {
  /** Row locks (FOR UPDATE) exist on Postgres only; SQLite's write transaction already excludes other writers. */
  private readonly rowLocks: boolean;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly now: () => number = Date.now,
  ) {
    this.rowLocks = dialectOf(db) === 'postgres';
  }

  async createAccount(id: string, initialCredits: number): Promise<Account> {
    const createdAt = this.now();
    await this.db.transaction().execute(async (trx) => {
      await trx.insertInto('accounts').values({ id, status: 'active', balance: initialCredits, created_at: createdAt }).execute();
      if (initialCredits > 0) {
        await trx
          .insertInto('ledger')
          .values({ account_id: id, task_id: null, amount: initialCredits, reason: 'initial_credits', created_at: createdAt })
          .execute();
      }
    });
    return { id, status: 'active', balance: initialCredits, held: 0, createdAt };
  }

  async getAccount(id: string): Promise<Account | null> {
    const row = await this.db.selectFrom('accounts').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toAccount(row) : null;
  }

  async listAccounts(limit: number): Promise<Account[]> {
    const rows = await this.db.selectFrom('accounts').selectAll().orderBy('created_at', 'desc').orderBy('id').limit(limit).execute();
    return rows.map(toAccount);
  }

  async listKeys(limit: number): Promise<ApiKey[]> {
    const rows = await this.db.selectFrom('api_keys').selectAll().orderBy('created_at', 'desc').orderBy('id').limit(limit).execute();
    return rows.map((row) => {
      const { hash: _hash, ...key } = toKey(row);
      return key;
    });
  }

  async setAccountStatus(id: string, status: AccountStatus): Promise<boolean> {
    const res = await this.db.updateTable('accounts').set({ status }).where('id', '=', id).executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  async createKey(key: Omit<ApiKey, 'createdAt'> & { hash: string }): Promise<ApiKey> {
    const createdAt = this.now();
    await this.db
      .insertInto('api_keys')
      .values({
        id: key.id,
        account_id: key.accountId,
        hash: key.hash,
        prefix: key.prefix,
        enabled: key.enabled ? 1 : 0,
        rate_limit: key.rateLimit,
        concurrency: key.concurrency,
        created_at: createdAt,
      })
      .execute();
    const { hash: _hash, ...rest } = key;
    return { ...rest, createdAt };
  }

  async findKeyByHash(hash: string): Promise<(ApiKey & { hash: string }) | null> {
    const row = await this.db.selectFrom('api_keys').selectAll().where('hash', '=', hash).executeTakeFirst();
    return row ? toKey(row) : null;
  }

  async findKeyWithAccount(hash: string): Promise<{ key: ApiKey & { hash: string }; account: Account } | null> {
    const row = await this.db
      .selectFrom('api_keys')
      .innerJoin('accounts', 'accounts.id', 'api_keys.account_id')
      .selectAll('api_keys')
      .select(['accounts.status as account_status', 'accounts.balance as account_balance', 'accounts.held as account_held', 'accounts.created_at as account_created_at'])
      .where('api_keys.hash', '=', hash)
      .executeTakeFirst();
    if (!row) return null;
    const { account_status, account_balance, account_held, account_created_at, ...key } = row;
    return {
      key: toKey(key),
      account: toAccount({ id: key.account_id, status: account_status, balance: account_balance, held: account_held, created_at: account_created_at }),
    };
  }

  async findKeyByPrefix(prefix: string): Promise<ApiKey[]> {
    const rows = await this.db.selectFrom('api_keys').selectAll().where('prefix', '=', prefix).execute();
    return rows.map((r) => {
      const { hash: _hash, ...rest } = toKey(r);
      return rest;
    });
  }

  async setKeyEnabled(keyId: string, enabled: boolean): Promise<boolean> {
    const res = await this.db
      .updateTable('api_keys')
      .set({ enabled: enabled ? 1 : 0 })
      .where('id', '=', keyId)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  async adjustCredits(accountId: string, amount: number, reason: string): Promise<Account> {
    // Never below zero: the change is what the balance can give. A ledger row even for a change of nothing.
    const adjusted = await this.changeBalance(accountId, reason, (balance) => Math.max(0, balance + amount) - balance, true);
    return adjusted!;
  }

  async spendCredits(accountId: string, amount: number, reason: string): Promise<Account | null> {
    // All of it from what the unfinished tasks' holds leave, or nothing.
    return this.changeBalance(accountId, reason, (balance, held) => (balance - held < amount ? null : -Math.max(0, amount)), false);
  }

  /**
   * Read-then-write in one transaction, the account's row locked on PostgreSQL (two changes at once would otherwise
   * both start from the same balance): `change` says by how much (null: refused, nothing written), and a ledger row
   * records it.
   */
  private async changeBalance(
    accountId: string,
    reason: string,
    change: (balance: number, held: number) => number | null,
    ledgerWhenZero: boolean,
  ): Promise<Account | null> {
    return writeTransaction(this.db, async (trx) => {
      const row = await trx
        .selectFrom('accounts')
        .selectAll()
        .where('id', '=', accountId)
        .$if(this.rowLocks, (q) => q.forUpdate())
        .executeTakeFirst();
      if (!row) throw new Error(`no account ${accountId}`);
      const balance = Number(row.balance);
      const delta = change(balance, Number(row.held));
      if (delta === null) return null;
      if (delta === 0 && !ledgerWhenZero) return toAccount(row);
      await trx.updateTable('accounts').set({ balance: balance + delta }).where('id', '=', accountId).execute();
      await trx.insertInto('ledger').values({ account_id: accountId, task_id: null, amount: delta, reason, created_at: this.now() }).execute();
      return toAccount({ ...row, balance: balance + delta });
    });
  }

  async ledger(accountId: string, limit: number): Promise<LedgerEntry[]> {
    const rows = await this.db
      .selectFrom('ledger')
      .selectAll()
      .where('account_id', '=', accountId)
      .orderBy('id', 'desc')
      .limit(limit)
      .execute();
    return rows.map((r) => ({
      id: Number(r.id),
      accountId: r.account_id,
      taskId: r.task_id,
      amount: Number(r.amount),
      reason: r.reason,
      createdAt: Number(r.created_at),
    }));
  }
}
