import { createHash, timingSafeEqual } from 'node:crypto';
import { AppError } from '../domain/errors.js';
import type { AccountStore } from '../ports/accounts.js';
import type { TaskStore } from '../ports/task-store.js';
import type { AuthFailurePolicy, RequestLimits } from '../ports/limits.js';
import { issueApiKey } from './auth.js';

/**
 * Wrong admin tokens one client address may present (docs/api.md, Admin API). API keys are 256 random bits; the
 * admin token is chosen by a person (16 characters at least), so its guesses are limited: past 10 wrong ones within
 * a minute, the address is refused for 10 minutes, the right token included (else a guesser would still learn when
 * it hit). Other addresses, and the admin CLI, are never affected.
 */
export const ADMIN_TOKEN_FAILURES: AuthFailurePolicy = { failures: 10, windowSeconds: 60, blockSeconds: 600 };

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
    private readonly limits: RequestLimits,
    token: string,
  ) {
    this.tokenHash = createHash('sha256').update(token).digest();
  }

  /**
   * Constant time: both sides hashed to the same length first, so neither length nor prefix leaks. `client`: the
   * caller's address, whose wrong tokens are counted (ADMIN_TOKEN_FAILURES); a missing token counts too.
   */
  async checkToken(presented: string | undefined, client: string): Promise<void> {
    const key = `admin:${client}`;
    const blocked = await this.limits.authFailureWait(key, ADMIN_TOKEN_FAILURES);
    if (blocked !== null) throw adminBlocked(blocked);
    const given = createHash('sha256').update(presented ?? '').digest();
    if (presented && timingSafeEqual(given, this.tokenHash)) return;
    const wait = await this.limits.recordAuthFailure(key, ADMIN_TOKEN_FAILURES);
    throw wait === null ? new AppError('ADMIN_TOKEN_INVALID') : adminBlocked(wait);
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

function adminBlocked(waitMs: number): AppError {
  const seconds = Math.ceil(waitMs / 1000);
  return new AppError(
    'RATE_LIMITED',
    `Too many wrong admin tokens from this address: admin requests from it are refused for ${seconds} s more, the right token included (the admin CLI is not limited)`,
    seconds,
  );
}
