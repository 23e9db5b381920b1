/**
 * What a task create costs SQLite alone, by batch size: SqliteTaskCreates (funds read, unfinished count, task insert
 * with its triggers, job insert, commit) in this process on a fresh embedded database with 200 keys, no HTTP.
 * Compare with the bare Fastify route's CPU per request (bench/http-ab.ts) to see how much of a create's budget
 * the durable write takes. `node --import tsx bench/sqlite-create-cost.ts`; PRAGMAS="mmap_size=268435456;..."
 * tries pragmas on the connection first. Prints CPU microseconds per create; nothing is written to bench/results.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteHandles } from '../src/adapters/sqlite/database.js';
import { machine } from './lib.js';
import { benchCreates } from './sqlite-creates.js';

const dir = await mkdtemp(join(tmpdir(), 'soundry-create-cost-'));
const { db, raw } = await openSqliteHandles(join(dir, 'soundry.db'));
for (const pragma of (process.env.PRAGMAS ?? '').split(';').filter(Boolean)) raw.pragma(pragma);
const writeBatch = await benchCreates(db, raw);

/** CPU microseconds per create, `n` creates written `batch` to a transaction (as the WriteBatcher groups them). */
async function cost(batch: number, n: number): Promise<number> {
  const before = process.cpuUsage();
  for (let i = 0; i < n; i += batch) await writeBatch(batch);
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
