/**
 * What a task create costs SQLite alone, by batch size: SqliteTaskCreates (funds read, unfinished count, task insert
 * with its triggers, job insert, commit) in this process on a fresh embedded database with 200 keys, no HTTP.
 * Compare with the bare Fastify route's CPU per request (bench/http-ab.ts) to see how much of a create's budget
 * the durable write takes. `node --import tsx bench/sqlite-create-cost.ts`; PRAGMAS="mmap_size=268435456;..."
 * tries pragmas on the connection first. Prints CPU microseconds per create; nothing is written to bench/results.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
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

const dir = await mkdtemp(join(tmpdir(), 'soundry-create-cost-'));
const { db, raw } = await openSqliteHandles(join(dir, 'soundry.db'));
for (const pragma of (process.env.PRAGMAS ?? '').split(';').filter(Boolean)) raw.pragma(pragma);
const accounts = new SqlAccountStore(db);
const keys: ApiKey[] = [];
for (let i = 0; i < 200; i++) keys.push((await issueApiKey(accounts, { credits: 1e9, rateLimit: 1e9, concurrency: 1e9 })).key);
const creates = new SqliteTaskCreates(db, raw, Date.now);
const params = { text: 'Benchmark sentence.', voice_id: 1001, language: 'en', emotion: 0, speed: 1 };
let next = 0;

/** CPU microseconds per create, `n` creates written `batch` to a transaction (as the WriteBatcher groups them). */
async function cost(batch: number, n: number): Promise<number> {
  const before = process.cpuUsage();
  for (let i = 0; i < n; i += batch) {
    const items: Array<{ task: NewTask; limit: number }> = [];
    for (let j = 0; j < batch; j++) {
      const key = keys[next++ % keys.length]!;
      const now = Date.now();
      items.push({ task: { id: newTaskId(now, randomUUID().replace(/-/g, '')), kind: 'tts', accountId: key.accountId, apiKeyId: key.id, params, createdAt: now, expiresAt: now + 3_600_000, hold: 1 }, limit: 1e9 });
    }
    await creates.writeBatch(items);
  }
  const used = process.cpuUsage(before);
  return (used.user + used.system) / n;
}

try {
  for (const batch of [1, 4, 8, 16]) await cost(batch, 4000); // warm-up
  console.log(`Machine: ${machine()}. PRAGMAS=${process.env.PRAGMAS ?? '(none)'}. ${new Date().toISOString()}`);
  for (const batch of [1, 4, 8, 16, 32]) console.log(`batch ${batch}: ${(await cost(batch, 20_000)).toFixed(1)} us of CPU per create`);
} finally {
  await db.destroy();
  await rm(dir, { recursive: true, force: true });
}
