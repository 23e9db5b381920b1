/**
 * Task creates on PostgreSQL (createWithinLimit, with the SQL queue's job row) through Kysely against
 * PostgresTaskCreates' named prepared statements, in one process on one pool, alternating, round after
 * round: what the path itself costs, without HTTP, auth and the other servers of bench/http-ab.ts. Per load:
 * creates/s with 10 in flight, this process's CPU per create (process.cpuUsage) and the CPU of the PostgreSQL
 * backends serving it (from /proc, so the server must run on this machine).
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres node --import tsx bench/pg-create-ab.ts
 * The user must be allowed to CREATE DATABASE: the bench makes a database of its own and drops it.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import pino from 'pino';
import { openPostgresHandles } from '../src/adapters/postgres/database.js';
import { PostgresTaskCreates } from '../src/adapters/postgres/task-creates.js';
import { SqlJobQueue } from '../src/adapters/sql/queue.js';
import { SqlTaskStore } from '../src/adapters/sql/task-store.js';
import { machine } from './lib.js';

const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const CALLS = Number(process.env.BENCH_CALLS ?? 5_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const IN_FLIGHT = 10;

function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** CPU seconds so far of each backend connected to `database`. */
async function backendCpu(admin: pg.Client, database: string): Promise<Map<number, number>> {
  const { rows } = await admin.query<{ pid: number }>('select pid from pg_stat_activity where datname = $1', [database]);
  return new Map(rows.map(({ pid }) => [pid, cpuSeconds(pid)]));
}

// Lower-case hex: safe unquoted (CREATE DATABASE takes no parameters).
const name = `soundry_bench_${randomBytes(4).toString('hex')}`;
const admin = new pg.Client({ connectionString: ADMIN_URL });
await admin.connect();
await admin.query(`CREATE DATABASE ${name}`);
const url = new URL(ADMIN_URL);
url.pathname = `/${name}`;
const { db, pool } = await openPostgresHandles(url.toString(), { poolSize: IN_FLIGHT });
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
  const rows: string[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const load1 = readFileSync('/proc/loadavg', 'utf8').split(' ')[0];
    for (const pathName of round % 2 ? (['kysely', 'named'] as const) : (['named', 'kysely'] as const)) {
      const dbBefore = await backendCpu(admin, name);
      const cpuBefore = process.cpuUsage();
      const started = performance.now();
      await Promise.all(
        Array.from({ length: IN_FLIGHT }, async () => {
          for (let i = 0; i < CALLS / IN_FLIGHT; i++) {
            if (!(await create(paths[pathName])).created) throw new Error('a create was refused');
          }
        }),
      );
      const seconds = (performance.now() - started) / 1000;
      const cpu = process.cpuUsage(cpuBefore);
      let dbCpu = 0;
      for (const [pid, s] of await backendCpu(admin, name)) dbCpu += s - (dbBefore.get(pid) ?? 0);
      rows.push(`| ${round} | ${pathName} | ${(CALLS / seconds).toFixed(0)} | ${((cpu.user + cpu.system) / CALLS).toFixed(1)} | ${((dbCpu * 1e6) / CALLS).toFixed(1)} | ${load1} |`);
      console.error(rows.at(-1));
    }
  }
  console.log(`Machine: ${machine()}. PostgreSQL at ${url.host}, pool of ${IN_FLIGHT}, ${IN_FLIGHT} creates in flight, ${CALLS} creates per load. Measured ${new Date().toISOString()}.\n`);
  console.log('| round | path | creates/s | Node CPU us/create | PostgreSQL CPU us/create | load avg |');
  console.log('|---|---|---|---|---|---|');
  for (const r of rows) console.log(r);
} finally {
  await db.destroy();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.end();
}
