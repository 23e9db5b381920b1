import { hash as digest, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { AppError, rateLimited } from '../domain/errors.js';
import type { Account, AccountStore, ApiKey } from '../ports/accounts.js';
import { KEY_LIMITS } from '../domain/key-limits.js';
import type { AuthFailurePolicy, RequestLimits } from '../ports/limits.js';

/** `login`: the podcast voice list, whose only codes are 100000 and 100001: the key is checked, nothing else. */
export type Operation = 'create' | 'query' | 'list' | 'login';

export interface Caller {
  key: ApiKey;
  account: Account;
  /** Effective limits: the key's own, else the server defaults. */
  rateLimit: number;
  concurrency: number;
}

/** One-shot (crypto.hash): a third of createHash's cost, and it runs on every authenticated request. */
export function hashApiKey(raw: string): string {
  return digest('sha256', raw, 'hex');
}

export interface AuthDefaults {
  rateLimit: number;
  concurrency: number;
  /** Invalid keys one client IP may present before it is answered 101003 for a while; null: not limited. */
  authFailures?: AuthFailurePolicy | null;
}

/**
 * Checks in the spec's order: key valid (101002), rate (101003); for create operations also
 * key enabled (101006) and account active (101005). Queries stay possible for a disabled key or a
 * suspended account so that finished results can still be fetched (docs/api.md).
 */
export class AuthService {
  constructor(
    private readonly accounts: AccountStore,
    private readonly limits: RequestLimits,
    private readonly defaults: AuthDefaults,
  ) {}

  /**
   * `client`: the caller's IP address. Invalid keys it presents are counted (missing keys are not:
   * they guess nothing); past AuthDefaults.authFailures it is answered 101003 with Retry-After
   * instead of 101002. A valid key is checked first and never refused for its IP's failures, so a
   * bad client cannot lock out a good key behind the same address (NAT, a shared proxy).
   */
  async authenticate(rawKey: string | undefined, op: Operation, client?: string): Promise<Caller> {
    if (!rawKey) throw new AppError('INVALID_API_KEY');
    const hash = hashApiKey(rawKey);
    const found = await this.accounts.findKeyWithAccount(hash);
    // The lookup is by hash; the constant-time comparison guards against a store that matches loosely.
    if (!found || !timingSafeEqual(Buffer.from(found.key.hash, 'hex'), Buffer.from(hash, 'hex'))) {
      await this.failed(op, client);
      throw new AppError('INVALID_API_KEY');
    }
    const { key, account } = found;
    // Held to the bounds keys are created with now: a key stored before they applied (an infinite rate made every
    // request an internal error, a tiny one turned limiting off) is limited as the nearest allowed value.
    const rateLimit = boundedRate(key.rateLimit ?? this.defaults.rateLimit, this.defaults.rateLimit);
    if (op !== 'login' && !(await this.limits.consumeRate(key.id, rateLimit))) throw rateLimited(rateLimit);
    if (op === 'create') {
      if (!key.enabled) throw new AppError('KEY_NOT_ENABLED');
      if (account.status !== 'active') throw new AppError('ACCOUNT_SUSPENDED');
    }
    const { hash: _hash, ...publicKey } = key;
    return { key: publicKey, account, rateLimit, concurrency: key.concurrency ?? this.defaults.concurrency };
  }

  /**
   * The caller's account as it is now: a Caller's comes from the key cache (up to its TTL old), which a create
   * holding credits does not clear. For answers that show the balance and its holds.
   */
  async currentAccount(caller: Caller): Promise<Account> {
    return (await this.accounts.getAccount(caller.account.id)) ?? caller.account;
  }

  private async failed(op: Operation, client: string | undefined): Promise<void> {
    const policy = this.defaults.authFailures;
    if (!policy || !client) return;
    const waitMs = await this.limits.recordAuthFailure(client, policy);
    // The podcast voice list has only 100000 and 100001 in the spec: it still counts, but answers 100001.
    if (waitMs !== null && op !== 'login') throw new AppError('RATE_LIMITED', undefined, Math.ceil(waitMs / 1000));
  }
}

export interface IssuedKey {
  apiKey: string;
  key: ApiKey;
  account: Account;
}

/** Issues keys: shown once, stored only as a SHA-256 hash (keys are 256-bit random, so no slow KDF is needed). */
export async function issueApiKey(
  accounts: AccountStore,
  opts: { accountId?: string; credits: number; rateLimit: number | null; concurrency: number | null },
): Promise<IssuedKey> {
  let account = opts.accountId ? await accounts.getAccount(opts.accountId) : null;
  if (opts.accountId && !account) throw new Error(`no account ${opts.accountId}`);
  if (!account) account = await accounts.createAccount(`acct_${randomUUID().replace(/-/g, '')}`, opts.credits);
  else if (opts.credits > 0) account = await accounts.adjustCredits(account.id, opts.credits, 'key_created_credits');
  const apiKey = `sk_${randomBytes(32).toString('base64url')}`;
  const key = await accounts.createKey({
    id: `key_${randomUUID().replace(/-/g, '')}`,
    accountId: account.id,
    hash: hashApiKey(apiKey),
    prefix: apiKey.slice(0, 11),
    enabled: true,
    rateLimit: opts.rateLimit,
    concurrency: opts.concurrency,
  });
  return { apiKey, key, account };
}

function boundedRate(rate: number, fallback: number): number {
  if (Number.isNaN(rate)) return fallback;
  return Math.min(KEY_LIMITS.rateMax, Math.max(KEY_LIMITS.rateMin, rate));
}
