/**
 * What a growing WAL costs a create: SqliteTaskCreates in batches of 8 (as the WriteBatcher groups them at 10
 * connections) on a fresh embedded database with 200 keys and SQLite's automatic checkpoint off, as the server
 * runs it. MODE=grow (default): nothing checkpoints, so the WAL grows by every commit, as it did in the server
 * under a steady load before the checkpoint thread held writes off (bench/results/http.md I). MODE=PASSIVE or
 * RESTART: that checkpoint on the writer's own connection every EVERY batches (default 200), timed apart.
 * `node --import tsx bench/sqlite-wal-growth.ts`; prints CPU per create (and the kernel's part) per 24,000 creates.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteHandles } from '../src/adapters/sqlite/database.js';
import { machine } from './lib.js';
import { benchCreates } from './sqlite-creates.js';

const mode = process.env.MODE ?? 'grow';
const every = Number(process.env.EVERY ?? 200);
const dir = await mkdtemp(join(tmpdir(), 'soundry-wal-growth-'));
const path = join(dir, 'soundry.db');
const { db, raw } = await openSqliteHandles(path, { checkpointIntervalMs: 0 });
raw.pragma('wal_autocheckpoint = 0');
const writeBatch = await benchCreates(db, raw);
console.log(`Machine: ${machine()}. MODE=${mode}${mode === 'grow' ? '' : ` every ${every} batches`}. ${new Date().toISOString()}`);
try {
  for (let round = 0; round < 8; round++) {
    const n = 24_000;
    const batch = 8;
    let checkpointMs = 0;
    const before = process.cpuUsage();
    for (let i = 0; i < n; i += batch) {
      await writeBatch(batch);
      if (mode !== 'grow' && (i / batch) % every === every - 1) {
        const t0 = performance.now();
        raw.pragma(`wal_checkpoint(${mode})`);
        checkpointMs += performance.now() - t0;
      }
    }
    const used = process.cpuUsage(before);
    const wal = (statSync(`${path}-wal`).size / 1e6).toFixed(0);
    console.log(`creates ${round * n}-${(round + 1) * n}: ${((used.user + used.system) / n).toFixed(1)} us of CPU per create (kernel ${(used.system / n).toFixed(1)}), checkpoints ${((checkpointMs * 1000) / n).toFixed(1)} us of wall time per create, WAL ${wal} MB`);
  }
} finally {
  await db.destroy();
  await rm(dir, { recursive: true, force: true });
}
