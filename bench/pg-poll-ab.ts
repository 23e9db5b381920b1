/**
 * The poll's two reads on PostgreSQL through Kysely against the named prepared statements of
 * PostgresPollReads, in one process on one pool, alternating, round after round: what the path itself
 * costs, without HTTP, auth and the other servers of bench/http-ab.ts. Per load: calls/s with 10 calls in
 * flight, this process's CPU per call (process.cpuUsage) and the CPU of the PostgreSQL backends serving it
 * (from /proc, so the server must run on this machine).
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres node --import tsx bench/pg-poll-ab.ts
 * The user must be allowed to CREATE DATABASE: the bench makes a database of its own and drops it.
 */
import pino from 'pino';
import { PostgresPollReads } from '../src/adapters/postgres/poll-reads.js';
import { SqlJobQueue } from '../src/adapters/sql/queue.js';
import { SqlTaskStore } from '../src/adapters/sql/task-store.js';
import { machine } from './lib.js';
import { alternate, pgBenchSettings, scratchPostgres } from './pg-ab.js';

const { adminUrl, calls: CALLS, rounds: ROUNDS, inFlight: IN_FLIGHT } = pgBenchSettings(20_000);
const scratch = await scratchPostgres(adminUrl, IN_FLIGHT);
const { db, pool, url } = scratch;
try {
  const logger = pino({ level: 'silent' });
  const reads = new PostgresPollReads(db, pool);
  const now = Date.now();
  const kysely = { tasks: new SqlTaskStore(db), queue: new SqlJobQueue(db, { pollIntervalMs: 60_000, logger }) };
  const named = { tasks: new SqlTaskStore(db, { readQueried: reads.queried }), queue: new SqlJobQueue(db, { pollIntervalMs: 60_000, logger, readPosition: reads.jobPosition }) };
  // A waiting enhancement with 50 jobs of its kind ahead of it: what a poll of a queued task reads.
  const task = (id: string) => ({ id, kind: 'enhance' as const, accountId: 'acct', apiKeyId: 'key', params: { flags: ['remove_noise'] }, createdAt: now, expiresAt: now + 3_600_000 });
  for (let i = 0; i < 50; i++) await kysely.tasks.create(task(`ahead-${String(i).padStart(2, '0')}`));
  for (let i = 0; i < 50; i++) await kysely.queue.enqueue({ taskId: `ahead-${String(i).padStart(2, '0')}`, kind: 'enhance' });
  await kysely.tasks.create(task('polled'));
  await kysely.queue.enqueue({ taskId: 'polled', kind: 'enhance' });
  const paths = { kysely, named };
  const loads = {
    'task row (getForQuery)': (p: typeof kysely) => p.tasks.getForQuery('polled'),
    'queue position': (p: typeof kysely) => p.queue.position({ taskId: 'polled', kind: 'enhance' }),
  };
  // Each path once before measuring: the first call prepares the statements and warms the pool.
  for (const p of Object.values(paths)) for (const load of Object.values(loads)) await Promise.all(Array.from({ length: IN_FLIGHT * 10 }, () => load(p)));
  const rows = await alternate(scratch, { rounds: ROUNDS, calls: CALLS, inFlight: IN_FLIGHT, paths, loads });
  console.log(`Machine: ${machine()}. PostgreSQL at ${url.host}, pool of ${IN_FLIGHT}, ${IN_FLIGHT} calls in flight, ${CALLS} calls per load. Measured ${new Date().toISOString()}.\n`);
  console.log('| round | read | path | calls/s | Node CPU us/call | PostgreSQL CPU us/call | load avg |');
  console.log('|---|---|---|---|---|---|---|');
  for (const r of rows) console.log(r);
} finally {
  await scratch.drop();
}
