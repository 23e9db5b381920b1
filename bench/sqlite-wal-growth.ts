/**
 * What a growing WAL costs a create: SqliteTaskCreates in batches of 8 (as the WriteBatcher groups them at 10
 * connections) on a fresh embedded database with 200 keys and SQLite's automatic checkpoint off, as the server
 * runs it. MODE=grow (default): nothing checkpoints, so the WAL grows by every commit, as it did in the server
 * under a steady load before the checkpoint thread held writes off (bench/results/http.md I). MODE=PASSIVE or
 * RESTART: that checkpoint on the writer's own connection every EVERY batches (default 200), timed apart.
 * `node --import tsx bench/sqlite-wal-growth.ts`; prints CPU per create (and the kernel's part) per 24,000 creates.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteHandles } from '../src/adapters/sqlite/database.js';
import { SqliteTaskCreates } from '../src/adapters/sqlite/task-creates.js';
import { SqlAccountStore } from '../src/adapters/sql/account-store.js';
import { issueApiKey } from '../src/services/auth.js';
import { newTaskId } from '../src/domain/task.js';
import type { NewTask } from '../src/ports/task-store.js';
import type { ApiKey } from '../src/ports/accounts.js';
import { machine } from './lib.js';

const mode = process.env.MODE ?? 'grow';
const every = Number(process.env.EVERY ?? 200);
const dir = await mkdtemp(join(tmpdir(), 'soundry-wal-growth-'));
const path = join(dir, 'soundry.db');
const { db, raw } = await openSqliteHandles(path, { checkpointIntervalMs: 0 });
raw.pragma('wal_autocheckpoint = 0');
const accounts = new SqlAccountStore(db);
const keys: ApiKey[] = [];
for (let i = 0; i < 200; i++) keys.push((await issueApiKey(accounts, { credits: 1e9, rateLimit: 1e9, concurrency: 1e9 })).key);
const creates = new SqliteTaskCreates(db, raw, Date.now);
const params = { text: 'Benchmark sentence.', voice_id: 1001, language: 'en', emotion: 0, speed: 1 };
let next = 0;
console.log(`Machine: ${machine()}. MODE=${mode}${mode === 'grow' ? '' : ` every ${every} batches`}. ${new Date().toISOString()}`);
try {
  for (let round = 0; round < 8; round++) {
    const n = 24_000;
    const batch = 8;
    let checkpointMs = 0;
    const before = process.cpuUsage();
    for (let i = 0; i < n; i += batch) {
      const items: Array<{ task: NewTask; limit: number }> = [];
      for (let j = 0; j < batch; j++) {
        const key = keys[next++ % keys.length]!;
        const now = Date.now();
        items.push({ task: { id: newTaskId(now, randomUUID().replace(/-/g, '')), kind: 'tts', accountId: key.accountId, apiKeyId: key.id, params, createdAt: now, expiresAt: now + 3_600_000, hold: 1 }, limit: 1e9 });
      }
      await creates.writeBatch(items);
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
