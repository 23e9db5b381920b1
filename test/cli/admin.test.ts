import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = new URL('../..', import.meta.url).pathname;
let dataDir: string;

/** Runs the CLI as a user would (the package's bin), on a real DATA_DIR. */
async function cli(...args: string[]): Promise<{ out: any; code: number; err: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [join(root, 'bin/soundry.js'), ...args], {
      env: { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'silent' },
    });
    return { out: JSON.parse(stdout.trim()), code: 0, err: stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { out: err.stdout ? JSON.parse(err.stdout) : null, code: err.code, err: err.stderr };
  }
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'soundry-cli-'));
});
afterAll(async () => rm(dataDir, { recursive: true, force: true }));

describe('admin CLI', () => {
  it('creates keys and accounts, manages credits, keys and accounts, lists tasks', async () => {
    const created = await cli('keys', 'create', '--credits', '50', '--rate-limit', '5', '--concurrency', '2');
    expect(created.code).toBe(0);
    expect(created.out).toEqual(expect.objectContaining({ api_key: expect.stringMatching(/^sk_/), account_id: expect.stringMatching(/^acct_/) }));
    const account = created.out.account_id as string;
    const second = await cli('keys', 'create', '--account', account);
    expect(second.out.account_id).toBe(account);
    expect(second.out.api_key).not.toBe(created.out.api_key);

    expect((await cli('credits', 'add', account, '25')).out).toEqual({ account_id: account, balance: 75 });
    expect((await cli('credits', 'show', account)).out).toEqual({ account_id: account, balance: 75, status: 'active' });
    expect((await cli('keys', 'disable', created.out.api_key)).out.enabled).toBe(false);
    expect((await cli('keys', 'enable', created.out.key_id)).out.enabled).toBe(true);
    expect((await cli('accounts', 'suspend', account)).out.status).toBe('suspended');
    expect((await cli('accounts', 'resume', account)).out.status).toBe('active');
    expect((await cli('tasks', 'list', '--status', 'waiting')).out).toEqual({ total: 0, tasks: [] });
  }, 60_000);

  it('fails with a JSON error and exit 1 on bad input', async () => {
    const missing = await cli('credits', 'show', 'acct_nope');
    expect(missing.code).toBe(1);
    expect(JSON.parse(missing.err.trim().split('\n').pop()!)).toEqual({ error: 'no account acct_nope' });
    expect((await cli('keys', 'disable', 'sk_unknown')).code).toBe(1);
    expect((await cli('keys', 'create', '--credits', '-3')).code).toBe(1);
    expect((await cli('tasks', 'list', '--kind', 'nope')).code).toBe(1);
  }, 60_000);

  it('refuses values that would quietly break a key or a balance, naming the range, and writes nothing', async () => {
    const lastError = (r: { err: string }) => JSON.parse(r.err.trim().split('\n').pop()!).error as string;
    // Each once accepted: Infinity made every request of the key an internal error, 1e-300 turned its limiting
    // off, 0 made a key that can do nothing, '' and ' ' read as 0, 0x10 as 16, 1e300 as a balance no charge lowers.
    const refused: Array<[string[], RegExp]> = [
      [['--rate-limit', 'Infinity'], /^--rate-limit must be a number of requests per second from 0.001 to 1000000, got "Infinity"$/],
      [['--rate-limit', '1e-300'], /^--rate-limit must be/],
      [['--rate-limit', '0'], /^--rate-limit must be/],
      [['--concurrency', '0'], /^--concurrency must be a whole number from 1 to 1000000, got "0"$/],
      [['--credits', ''], /^--credits must be a whole number from 0 to 1000000000, got ""$/],
      [['--credits', ' '], /^--credits must be/],
      [['--credits', '0x10'], /^--credits must be/],
      [['--credits', '1e300'], /^--credits must be/],
      [['--credits', '9007199254740993'], /^--credits must be/],
    ];
    const before = (await cli('tasks', 'list')).code;
    expect(before).toBe(0);
    for (const [args, message] of refused) {
      const r = await cli('keys', 'create', ...args);
      expect(r.code, args.join(' ')).toBe(1);
      expect(lastError(r), args.join(' ')).toMatch(message);
    }
    const ok = await cli('keys', 'create', '--credits', '7', '--rate-limit', '0.5', '--concurrency', '1');
    expect(ok.code).toBe(0);
    for (const n of ['0', '-1', '1e3', '1000000001']) {
      const r = await cli('credits', 'add', ok.out.account_id, n);
      expect(r.code, n).toBe(1);
      expect(lastError(r)).toMatch(/^n must be a whole number from 1 to 1000000000/);
    }
    expect((await cli('credits', 'show', ok.out.account_id)).out.balance).toBe(7);
  }, 120_000);
});
