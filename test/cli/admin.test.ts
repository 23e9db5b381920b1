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
});
