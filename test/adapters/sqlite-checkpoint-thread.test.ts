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
  // About 1 MiB of new pages per call, in one commit.
  const write = () => raw.transaction(() => { for (let i = 0; i < 64; i++) insert.run(Buffer.alloc(16 * 1024, i)); })();
  const wal = async () => (await stat(`${path}-wal`)).size;
  return { path, db, raw, write, wal };
}

describe('CheckpointThread', () => {
  it('keeps the WAL bounded with the automatic checkpoint off: commits restart it once the thread has copied it', async () => {
    const { path, db, write, wal } = await database();
    const thread = new CheckpointThread(path, 20, () => undefined);
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

  it('without the thread the WAL grows (the control), and past the fallback size the caller checkpoints itself', async () => {
    const { path, db, raw, write, wal } = await database();
    for (let i = 0; i < 8; i++) write();
    expect(await wal()).toBeGreaterThan(7 * 1024 * 1024);
    let fallbacks = 0;
    // A thread that died (terminated below): only the fallback on the caller's connection is left.
    const orphan = new CheckpointThread(path, 20, () => {
      fallbacks++;
      raw.pragma('wal_checkpoint(PASSIVE)');
    }, () => undefined, 4 * 1024 * 1024);
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
