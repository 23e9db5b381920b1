import { createHash, timingSafeEqual } from 'node:crypto';
import { AppError } from '../domain/errors.js';
import type { AccountStore } from '../ports/accounts.js';
import type { TaskStore } from '../ports/task-store.js';
import { issueApiKey } from './auth.js';

/** Enough rows for a self-hosted server's admin page; the CLI reaches the rest. */
const LIST_LIMIT = 1000;

/**
 * What the admin page may do (ADMIN_TOKEN): the admin CLI's key and credit commands, plus a listing
 * of accounts, keys and their usage.
 */
export class AdminService {
  private readonly tokenHash: Buffer;

  constructor(
    private readonly accounts: AccountStore,
    private readonly tasks: TaskStore,
    token: string,
  ) {
    this.tokenHash = createHash('sha256').update(token).digest();
  }

  /** Constant time: both sides hashed to the same length first, so neither length nor prefix leaks. */
  checkToken(presented: string | undefined): void {
    const given = createHash('sha256').update(presented ?? '').digest();
    if (!presented || !timingSafeEqual(given, this.tokenHash)) throw new AppError('ADMIN_TOKEN_INVALID');
  }

  async overview() {
    const [accounts, keys, usage] = await Promise.all([this.accounts.listAccounts(LIST_LIMIT), this.accounts.listKeys(LIST_LIMIT), this.tasks.usageByKey()]);
    const usageOf = new Map(usage.map((u) => [u.apiKeyId, u]));
    return accounts.map((a) => ({
      id: a.id,
      status: a.status,
      balance: a.balance,
      created_at: a.createdAt,
      keys: keys
        .filter((k) => k.accountId === a.id)
        .map((k) => {
          const u = usageOf.get(k.id);
          return {
            id: k.id,
            prefix: k.prefix,
            enabled: k.enabled,
            rate_limit: k.rateLimit,
            concurrency: k.concurrency,
            created_at: k.createdAt,
            usage: { tasks: u?.tasks ?? 0, succeeded: u?.succeeded ?? 0, failed: u?.failed ?? 0, credits: u?.credits ?? 0 },
          };
        }),
    }));
  }

  async addCredits(accountId: string, amount: number) {
    if (!(await this.accounts.getAccount(accountId))) throw new AppError('INVALID_PARAMETERS', `Invalid parameters: account_id: no account ${accountId}`);
    const account = await this.accounts.adjustCredits(accountId, amount, 'admin_credit');
    return { account_id: account.id, balance: account.balance };
  }

  async createKey(opts: { accountId?: string; credits: number }) {
    if (opts.accountId && !(await this.accounts.getAccount(opts.accountId))) {
      throw new AppError('INVALID_PARAMETERS', `Invalid parameters: account_id: no account ${opts.accountId}`);
    }
    const issued = await issueApiKey(this.accounts, { accountId: opts.accountId, credits: opts.credits, rateLimit: null, concurrency: null });
    return { api_key: issued.apiKey, key_id: issued.key.id, account_id: issued.account.id, balance: issued.account.balance };
  }

  async setKeyEnabled(keyId: string, enabled: boolean) {
    if (!(await this.accounts.setKeyEnabled(keyId, enabled))) throw new AppError('INVALID_PARAMETERS', `Invalid parameters: key_id: no key ${keyId}`);
    return { key_id: keyId, enabled };
  }
}
