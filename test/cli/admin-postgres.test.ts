import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgres } from '../../src/adapters/postgres/database.js';
import { SqlAccountStore } from '../../src/adapters/sql/account-store.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';

const run = promisify(execFile);
const root = new URL('../..', import.meta.url).pathname;
let pg: TestDatabase;
let dataDir: string;

/** The CLI as a user runs it, with the server's DATABASE_URL (and SIGNING_SECRET, which config requires with it). */
async function cli(...args: string[]): Promise<any> {
  const { stdout } = await run(process.execPath, [join(root, 'bin/soundry.js'), ...args], {
    env: { ...process.env, DATA_DIR: dataDir, DATABASE_URL: pg.url, SIGNING_SECRET: 'admin-cli-postgres-secret', LOG_LEVEL: 'silent' },
  });
  return JSON.parse(stdout.trim());
}

beforeAll(async () => {
  pg = await createTestDatabase();
  dataDir = await mkdtemp(join(tmpdir(), 'soundry-cli-pg-'));
});
afterAll(async () => {
  await pg?.drop();
  await rm(dataDir, { recursive: true, force: true });
});

describe('admin CLI on Postgres', () => {
  it('works on the database DATABASE_URL names, not on a SQLite file', async () => {
    const created = await cli('keys', 'create', '--credits', '40');
    expect(created.account_id).toMatch(/^acct_/);
    expect(await cli('credits', 'add', created.account_id, '2')).toEqual({ account_id: created.account_id, balance: 42 });
    expect((await cli('keys', 'disable', created.key_id)).enabled).toBe(false);

    const db = await openPostgres(pg.url);
    try {
      const account = await new SqlAccountStore(db).getAccount(created.account_id);
      expect(account).toMatchObject({ balance: 42, status: 'active' });
    } finally {
      await db.destroy();
    }
    expect(existsSync(join(dataDir, 'soundry.db'))).toBe(false);
  }, 60_000);
});
