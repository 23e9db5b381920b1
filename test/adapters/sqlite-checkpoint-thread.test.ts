import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { openSqliteHandles } from '../../src/adapters/sqlite/database.js';
import { CheckpointThread } from '../../src/adapters/sqlite/checkpoint-thread.js';

/** A real SQLite file whose own automatic checkpoint is off, as the server runs it. */
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

async function database() {
  const dir = await mkdtemp(join(tmpdir(), 'soundry-ckpt-'));
  dirs.push(dir);
  const path = join(dir, 'soundry.db');
  const { db, raw } = await openSqliteHandles(path, { checkpointIntervalMs: 0 });
  raw.pragma('wal_autocheckpoint = 0');
  await sql`create table blobs (id integer primary key, body blob)`.execute(db);
  const insert = raw.prepare('insert into blobs (body) values (?)');
  // About 1 MiB of new pages per call (or `rows` x 16 KiB), in one commit.
  const write = (rows = 64) => raw.transaction(() => { for (let i = 0; i < rows; i++) insert.run(Buffer.alloc(16 * 1024, i)); })();
  const wal = async () => (await stat(`${path}-wal`)).size;
  return { path, db, raw, write, wal };
}

describe('CheckpointThread', () => {
  it('keeps the WAL bounded with the automatic checkpoint off: commits restart it once the thread has copied it', async () => {
    const { path, db, write, wal } = await database();
    const thread = new CheckpointThread(path, { intervalMs: 20, fallback: () => undefined });
    try {
      for (let i = 0; i < 24; i++) {
        write();
        await sleep(60); // a few thread checkpoints between commits
      }
      // 24 MiB were committed; without checkpoints the WAL would hold all of it.
      expect(await wal()).toBeLessThan(6 * 1024 * 1024);
    } finally {
      await thread.close();
      await db.destroy();
    }
  });

  it('keeps the WAL bounded under writes that never pause, by holding them off for a checkpoint once the WAL is large', async () => {
    // The server's create load: a commit after every turn of the event loop. A checkpoint beside it never
    // catches up with the last commit, so the WAL never starts again (before: 2.4 GB after 30 s of creates).
    const run = async (hold: boolean) => {
      const { path, db, write, wal } = await database();
      let holds = 0;
      const holdWrites = (work: () => Promise<void>) => {
        holds++;
        return db.connection().execute(() => work());
      };
      const thread = new CheckpointThread(path, { intervalMs: 10, fallback: () => undefined, restartFrames: 256, ...(hold ? { holdWrites } : {}) });
      let largest = 0;
      try {
        for (let i = 0; i < 3072; i++) {
          // Every write of the process goes through Kysely's connection, which is what holdWrites holds.
          await db.connection().execute(async () => write(2));
          largest = Math.max(largest, await wal());
          await new Promise((resolve) => setImmediate(resolve));
        }
        return { largest, holds };
      } finally {
        await thread.close();
        await db.destroy();
      }
    };
    // 96 MiB of rows were committed (about 123 MiB of WAL frames). Without the holds the WAL keeps most of it (it
    // starts again only when a checkpoint happens to end between two commits); with them each held checkpoint lets
    // the next commit start the WAL again, whatever the total: the WAL is as large as what comes in during one
    // round of checkpoints (5-16 MiB seen on an idle machine, up to 37 MiB beside another test run).
    const bound = 56 * 1024 * 1024;
    const control = await run(false);
    expect(control.largest).toBeGreaterThan(bound);
    const bounded = await run(true);
    expect(bounded.holds).toBeGreaterThan(0);
    expect(bounded.largest).toBeLessThan(bound);
  });

  it('without the thread the WAL grows (the control), and past the fallback size the caller checkpoints itself', async () => {
    const { path, db, raw, write, wal } = await database();
    for (let i = 0; i < 8; i++) write();
    expect(await wal()).toBeGreaterThan(7 * 1024 * 1024);
    let fallbacks = 0;
    // A thread that died (terminated below): only the fallback on the caller's connection is left.
    const orphan = new CheckpointThread(path, {
      intervalMs: 20,
      fallback: () => {
        fallbacks++;
        raw.pragma('wal_checkpoint(PASSIVE)');
      },
      fallbackWalBytes: 4 * 1024 * 1024,
    });
    try {
      await (orphan as unknown as { worker: { terminate(): Promise<number> } }).worker.terminate();
      for (let i = 0; i < 20 && fallbacks === 0; i++) await sleep(25);
      expect(fallbacks).toBeGreaterThan(0);
      write(); // the checkpointed WAL restarts from its beginning
      expect(await wal()).toBeLessThan(9 * 1024 * 1024);
    } finally {
      await orphan.close();
      await db.destroy();
    }
  });
});
