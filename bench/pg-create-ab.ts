/**
 * Task creates on PostgreSQL (createWithinLimit, with the SQL queue's job row) through Kysely against
 * PostgresTaskCreates' named prepared statements, in one process on one pool, alternating, round after
 * round: what the path itself costs, without HTTP, auth and the other servers of bench/http-ab.ts. Per load:
 * creates/s with 10 in flight, this process's CPU per create (process.cpuUsage) and the CPU of the PostgreSQL
 * backends serving it (from /proc, so the server must run on this machine).
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres node --import tsx bench/pg-create-ab.ts
 * The user must be allowed to CREATE DATABASE: the bench makes a database of its own and drops it.
 */
import pino from 'pino';
import { PostgresTaskCreates } from '../src/adapters/postgres/task-creates.js';
import { SqlJobQueue } from '../src/adapters/sql/queue.js';
import { SqlTaskStore } from '../src/adapters/sql/task-store.js';
import { machine } from './lib.js';
import { alternate, pgBenchSettings, scratchPostgres } from './pg-ab.js';

const { adminUrl, calls: CALLS, rounds: ROUNDS, inFlight: IN_FLIGHT } = pgBenchSettings(5_000);
const scratch = await scratchPostgres(adminUrl, IN_FLIGHT);
const { db, pool, url } = scratch;
try {
  const queue = new SqlJobQueue(db, { pollIntervalMs: 60_000, logger: pino({ level: 'silent' }) });
  // As the server composes them without Redis: the job row in the create's transaction, due at the queue's clock.
  const paths = {
    kysely: new SqlTaskStore(db, { alsoEnqueue: queue.enqueueWithin }),
    named: new SqlTaskStore(db, { alsoEnqueue: queue.enqueueWithin, createOne: new PostgresTaskCreates(db, pool, Date.now).createOne }),
  };
  let seq = 0;
  // A key of its own per create: each count reads nothing, so the loads stay alike however many tasks the table holds.
  const create = (store: SqlTaskStore) => {
    const now = Date.now();
    const n = seq++;
    return store.createWithinLimit({ id: `t-${n}`, kind: 'tts', accountId: 'acct', apiKeyId: `key-${n}`, params: { text: 'Hello there.' }, createdAt: now, expiresAt: now + 3_600_000 }, 5);
  };
  // Each path once before measuring: the first call prepares the statements and warms the pool.
  for (const p of Object.values(paths)) await Promise.all(Array.from({ length: IN_FLIGHT * 10 }, () => create(p)));
  const rows = await alternate(scratch, {
    rounds: ROUNDS,
    calls: CALLS,
    inFlight: IN_FLIGHT,
    paths,
    loads: {
      create: async (store: SqlTaskStore) => {
        if (!(await create(store)).created) throw new Error('a create was refused');
      },
    },
  });
  console.log(`Machine: ${machine()}. PostgreSQL at ${url.host}, pool of ${IN_FLIGHT}, ${IN_FLIGHT} creates in flight, ${CALLS} creates per load. Measured ${new Date().toISOString()}.\n`);
  console.log('| round | path | creates/s | Node CPU us/create | PostgreSQL CPU us/create | load avg |');
  console.log('|---|---|---|---|---|---|');
  for (const r of rows) console.log(r);
} finally {
  await scratch.drop();
}
