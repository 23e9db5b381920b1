import BetterSqlite3 from 'better-sqlite3';
import { copyFile, mkdtemp, open, readdir, readFile, rename, rm, stat, unlink, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { creationMarkerPath, openSqlite } from '../../src/adapters/sqlite/database.js';
import { StartupRefusal } from '../../src/domain/errors.js';

const dirs: string[] = [];
async function freshDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'soundry-sqlite-durability-'));
  dirs.push(dir);
  return dir;
}
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function addAccounts(path: string, n: number, opts = {}) {
  const db = await openSqlite(path, opts);
  for (let i = 0; i < n; i++) {
    await db.insertInto('accounts').values({ id: `acct-${i}`, status: 'active', balance: 10, created_at: Date.now() }).execute();
  }
  return db;
}

/** What the database file alone holds, read from a copy made without its -wal file. */
async function rowsInMainFile(path: string): Promise<number> {
  const copy = `${path}.copy`;
  await copyFile(path, copy);
  const c = new BetterSqlite3(copy, { readonly: true });
  try {
    return (c.prepare('select count(*) as n from accounts').get() as { n: number }).n;
  } catch {
    return 0; // no schema yet in the main file
  } finally {
    c.close();
    await rm(copy, { force: true });
  }
}

async function refusal(p: Promise<unknown>): Promise<StartupRefusal> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(StartupRefusal);
  return err as StartupRefusal;
}

describe('SQLite durability', () => {
  it('a clean close leaves everything in the database file (WAL checkpointed and emptied); a normal reopen works', async () => {
    const path = join(await freshDir(), 'soundry.db');
    const db = await addAccounts(path, 20, { checkpointIntervalMs: 0 });
    await db.destroy();
    expect(existsSync(`${path}-wal`) ? (await stat(`${path}-wal`)).size : 0).toBe(0);
    expect(await rowsInMainFile(path)).toBe(20);
    expect(existsSync(creationMarkerPath(path))).toBe(true);
    const again = await openSqlite(path);
    expect(await again.selectFrom('accounts').select(sql<number>`count(*)`.as('n')).executeTakeFirstOrThrow()).toEqual({ n: 20 });
    await again.destroy();
  });

  it('while open, a timer copies committed data from the WAL into the database file', async () => {
    const path = join(await freshDir(), 'soundry.db');
    const db = await addAccounts(path, 5, { checkpointIntervalMs: 100 });
    try {
      await new Promise((r) => setTimeout(r, 400));
      expect(await rowsInMainFile(path)).toBe(5);
      // Without the timer (interval 0) the rows stay in the WAL only: what the attack relied on.
      const other = join(await freshDir(), 'soundry.db');
      const db2 = await addAccounts(other, 5, { checkpointIntervalMs: 0 });
      await new Promise((r) => setTimeout(r, 400));
      expect(await rowsInMainFile(other)).toBe(0);
      await db2.destroy();
    } finally {
      await db.destroy();
    }
  });

  it('refuses to start, naming the file, when the database is missing but had been created here', async () => {
    const dir = await freshDir();
    const path = join(dir, 'soundry.db');
    await (await addAccounts(path, 1)).destroy();
    await unlink(path);
    const err = await refusal(openSqlite(path));
    expect(err.message).toContain(`The database ${path} is missing`);
    expect(err.message).toContain(creationMarkerPath(path));
    expect(existsSync(path)).toBe(false); // nothing was created in its place
    // The operator's way to start over on purpose.
    await unlink(creationMarkerPath(path));
    await (await openSqlite(path)).destroy();
  });

  it('refuses after `rm soundry.db*` (the file, its -wal and -shm): the marker is outside that glob', async () => {
    const dir = await freshDir();
    const path = join(dir, 'soundry.db');
    await (await addAccounts(path, 1)).destroy();
    // What the shell's `rm soundry.db*` removes; it used to remove the marker (soundry.db.created) too.
    for (const name of await readdir(dir)) if (name.startsWith('soundry.db')) await rm(join(dir, name));
    const err = await refusal(openSqlite(path));
    expect(err.message).toContain(`The database ${path} is missing`);
    expect(existsSync(path)).toBe(false);
  });

  it('honours the marker of earlier releases (soundry.db.created), and moves it to the hidden name', async () => {
    const dir = await freshDir();
    const path = join(dir, 'soundry.db');
    await (await addAccounts(path, 1)).destroy();
    await rename(creationMarkerPath(path), `${path}.created`);
    await (await openSqlite(path)).destroy();
    expect(existsSync(`${path}.created`)).toBe(false);
    expect(await readFile(creationMarkerPath(path), 'utf8')).toMatch(/^soundry\.db created \d{4}-/);
    // A legacy marker with the database gone refuses too.
    await rename(creationMarkerPath(path), `${path}.created`);
    await unlink(path);
    expect((await refusal(openSqlite(path))).message).toContain(`${path}.created`);
  });

  it('refuses a database that lost its contents (WAL deleted before any checkpoint, then a crash)', async () => {
    const dir = await freshDir();
    const path = join(dir, 'soundry.db');
    // An empty file beside the marker: what is left when the schema lived only in a deleted WAL.
    await (await openSqlite(path)).destroy();
    await rm(path);
    await writeFile(path, '');
    const err = await refusal(openSqlite(path));
    expect(err.message).toContain('holds no data');
  });

  it('refuses a damaged file (quick_check fails) and a file that is not a database', async () => {
    const dir = await freshDir();
    const path = join(dir, 'soundry.db');
    await (await addAccounts(path, 2000)).destroy();
    // Overwrite pages in the middle of the file (the accounts table's b-tree), leaving the header intact.
    const size = (await stat(path)).size;
    const fh = await open(path, 'r+');
    await fh.write(Buffer.alloc(8192, 0x5a), 0, 8192, Math.floor(size / 2 / 4096) * 4096);
    await fh.close();
    const damaged = await refusal(openSqlite(path));
    expect(damaged.message).toContain(`The database ${path} is damaged`);
    expect(damaged.message).not.toContain('not a database'); // found by quick_check, past the header

    const garbage = join(dir, 'garbage.db');
    await writeFile(garbage, Buffer.alloc(8192, 0x41));
    const notDb = await refusal(openSqlite(garbage));
    expect(notDb.message).toContain('is damaged');
    expect(notDb.message).toContain('not a database');
    expect(await readFile(garbage)).toEqual(Buffer.alloc(8192, 0x41)); // left as it was
  });
});
