/**
 * SqlTaskStore.getForQuery() (a poll's read) on the embedded profile's synchronous read (SqliteReadConnection), an older checkout's
 * store against this one, in one process on one database, alternating, CPU per call from process.cpuUsage:
 * whether a change to get() costs the SQLite poll anything, below the noise of an HTTP bench.
 *   BENCH_BEFORE_SRC=/tmp/before/src node --import tsx bench/store-get-ab.ts
 * where /tmp/before is `git archive <rev> src | tar -x -C /tmp/before` (with a node_modules link).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { openSqlite } from '../src/adapters/sqlite/database.js';
import { SqliteReadConnection } from '../src/adapters/sqlite/read-connection.js';
import { SqlTaskStore } from '../src/adapters/sql/task-store.js';

const beforeSrc = process.env.BENCH_BEFORE_SRC;
if (!beforeSrc) throw new Error('set BENCH_BEFORE_SRC to an older checkout\'s src folder');
const before = (await import(resolve(beforeSrc, 'adapters/sql/task-store.ts'))) as { SqlTaskStore: typeof SqlTaskStore };
const CALLS = Number(process.env.BENCH_CALLS ?? 200_000);
const ROUNDS = 6;

const dir = await mkdtemp(join(tmpdir(), 'soundry-store-get-'));
const path = join(dir, 'soundry.db');
const db = await openSqlite(path);
const reads = new SqliteReadConnection(path);
try {
  const now = Date.now();
  await new SqlTaskStore(db).create({ id: 'task-1', kind: 'tts', accountId: 'acct', apiKeyId: 'key', params: { text: 'Benchmark sentence.' }, createdAt: now, expiresAt: now + 3_600_000 });
  // Since getForQuery, a poll reads the row without its params (bench/poll-params-ab.ts compares that with
  // the older get()); both stores here must have it.
  const readQueried = (id: string) => reads.queried(id);
  const stores = { before: new before.SqlTaskStore(db, { readQueried }), after: new SqlTaskStore(db, { readQueried }) };
  const perCall: Record<'before' | 'after', number[]> = { before: [], after: [] };
  for (let round = 0; round < ROUNDS; round++) {
    // Alternating which goes first, so that warm-up and load swings fall on both.
    for (const name of round % 2 ? (['after', 'before'] as const) : (['before', 'after'] as const)) {
      const store = stores[name];
      const start = process.cpuUsage();
      for (let i = 0; i < CALLS; i++) await store.getForQuery('task-1');
      const used = process.cpuUsage(start);
      perCall[name].push((used.user + used.system) / CALLS);
    }
  }
  const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;
  for (const name of ['before', 'after'] as const) {
    console.log(`${name}: ${perCall[name].map((us) => us.toFixed(2)).join(' ')} us CPU per get (median ${median(perCall[name]).toFixed(2)})`);
  }
} finally {
  reads.close();
  await db.destroy();
  await rm(dir, { recursive: true, force: true });
}
