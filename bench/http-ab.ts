/**
 * Before/after of the hot path in one run: the bare Fastify route, an older Soundry (BENCH_BEFORE_MAIN: its
 * src/main.ts, e.g. from `git archive <rev> src public | tar -x -C /tmp/before` plus its package.json and a
 * node_modules link) and this one, each in its own process (as `npm start` runs them: ROLE=all, LOG_LEVEL=info, unless BENCH_ROLE or BENCH_LOG_LEVEL; copies of one prepared database), loaded
 * in turn, round after round, so that a load swing on a shared machine hits all three alike. Per load: req/s,
 * p99, and the server's CPU per request from /proc (steadier than req/s when other work competes for the
 * cores); then p99 with the load capped at half the bare route's rate (the issue's latency goal).
 *   BENCH_BEFORE_MAIN=/tmp/before/src/main.ts BENCH_ROUNDS=3 node --import tsx bench/http-ab.ts
 * The database is embedded SQLite, or with BENCH_DATABASE_URL (a PostgreSQL server whose user may CREATE
 * DATABASE, e.g. postgres://postgres@127.0.0.1:5432/postgres) a database of its own per server, copied from
 * one prepared database and dropped afterwards, without REDIS_URL (the SQL queue, limits in process); the
 * PostgreSQL backends serving each server are then measured too (DB CPU us/req, from /proc, so the server
 * must run on this machine).
 * Prints a markdown table; nothing is written to bench/results (the figures go there by hand, with context).
 */
import autocannon from 'autocannon';
import { randomBytes } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import BetterSqlite3 from 'better-sqlite3';
import { readFileSync } from 'node:fs';
import type { ChildProcess } from 'node:child_process';
import pg from 'pg';
import { openPostgres } from '../src/adapters/postgres/database.js';
import { httpRequests, issueBenchKeys, prepareHttpData } from './http.js';
import { machine, mainThreadCpuSeconds, processCpuSeconds, startNode, waitHttp } from './lib.js';
import { backendCpu } from './pg-ab.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = 10;

interface Server {
  name: string;
  child: ChildProcess;
  base: string;
  /** PostgreSQL: the database it runs on, whose backends' CPU is counted with its loads. */
  database?: string;
}

interface Measured {
  rps: number;
  p99: number;
  cpuUs: number;
  /** The main thread's (event loop's) CPU per request: without engine threads working off a backlog. */
  loopUs: number;
  /** CPU of the PostgreSQL backends serving the server, per request; null on SQLite (in the server's process). */
  dbCpuUs: number | null;
  errors: number;
}

/**
 * Only the server under load runs: the others are stopped (SIGSTOP) meanwhile. With ROLE=all a create load
 * leaves a backlog of tasks whose synthesis would otherwise go on in the background and take the cores
 * from whichever server is measured next.
 */
function runOnly(server: Server): void {
  for (const s of servers) {
    if (s.name === 'bare' || s.child.exitCode !== null) continue;
    s.child.kill(s === server ? 'SIGCONT' : 'SIGSTOP');
  }
}

async function measure(server: Server, opts: autocannon.Options): Promise<Measured> {
  // A port another run already held answered waitHttp while this server exited (it logs to stdout, which is ignored).
  if (server.child.exitCode !== null || server.child.signalCode !== null) throw new Error(`the ${server.name} server has exited (port in use? try BENCH_PORT)`);
  runOnly(server);
  const before = processCpuSeconds(server.child.pid!);
  const loopBefore = mainThreadCpuSeconds(server.child.pid!);
  const dbBefore = pgAdmin && server.database ? await backendCpu(pgAdmin, server.database) : null;
  const r = await autocannon({ duration: SECONDS, connections: CONNECTIONS, ...opts });
  const cpu = processCpuSeconds(server.child.pid!) - before;
  const loop = mainThreadCpuSeconds(server.child.pid!) - loopBefore;
  const requests = Math.max(1, r.requests.total);
  let dbCpuUs: number | null = null;
  if (pgAdmin && server.database && dbBefore) {
    // A backend that opened during the load counts from zero (its start-up is part of the cost).
    let dbCpu = 0;
    for (const [pid, seconds] of await backendCpu(pgAdmin, server.database)) dbCpu += seconds - (dbBefore.get(pid) ?? 0);
    dbCpuUs = (dbCpu * 1e6) / requests;
  }
  return { rps: r.requests.average, p99: r.latency.p99, cpuUs: (cpu * 1e6) / requests, loopUs: (loop * 1e6) / requests, dbCpuUs, errors: r.errors + r.non2xx };
}

/** Runs one statement as the admin user of BENCH_DATABASE_URL, on a connection of its own. */
async function asAdmin(url: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

/**
 * Two PostgreSQL databases with the same keys: one prepared (migrated, keys issued), the other created
 * from it as a template. Lower-case hex names: safe unquoted (CREATE DATABASE takes no parameters).
 */
async function postgresCopies(adminUrl: string): Promise<{ apiKey: string; clientKeys: string[]; names: { before: string; after: string }; urlOf(name: string): string }> {
  const base = `soundry_bench_${randomBytes(4).toString('hex')}`;
  const names = { before: `${base}_before`, after: `${base}_after` };
  const urlOf = (name: string) => {
    const u = new URL(adminUrl);
    u.pathname = `/${name}`;
    return u.toString();
  };
  await asAdmin(adminUrl, `CREATE DATABASE ${names.before}`);
  const db = await openPostgres(urlOf(names.before));
  try {
    const keys = await issueBenchKeys(db);
    await db.destroy();
    await asAdmin(adminUrl, `CREATE DATABASE ${names.after} TEMPLATE ${names.before}`);
    return { ...keys, names, urlOf };
  } catch (err) {
    await db.destroy().catch(() => undefined);
    throw err;
  }
}

const PG_URL = process.env.BENCH_DATABASE_URL;
const { dataDir, apiKey, clientKeys } = await prepareHttpData();
if (process.env.BENCH_BEFORE_MAIN) await beforeDatabase(process.env.BENCH_BEFORE_MAIN, dataDir, `${dataDir}-before`);

/**
 * The older Soundry's embedded database: migrated by its own code (it refuses a schema newer than it knows),
 * then given the same accounts and keys as the prepared one, by the columns the older version has.
 */
async function beforeDatabase(beforeMain: string, from: string, to: string): Promise<void> {
  await mkdir(to, { recursive: true });
  const { openSqlite: openBefore } = (await import(pathToFileURL(resolve(dirname(beforeMain), 'adapters/sqlite/database.ts')).href)) as { openSqlite: (path: string) => Promise<{ destroy(): Promise<void> }> };
  await (await openBefore(join(to, 'soundry.db'))).destroy();
  const db = new BetterSqlite3(join(to, 'soundry.db'));
  try {
    db.prepare('attach database ? as prepared').run(join(from, 'soundry.db'));
    // By the older version's columns: a later one may have added some (accounts.held, 0004).
    for (const table of ['accounts', 'api_keys', 'ledger']) {
      const columns = (db.prepare(`select name from pragma_table_info('${table}', 'main')`).all() as { name: string }[]).map((c) => c.name).join(', ');
      db.exec(`insert into main.${table} (${columns}) select ${columns} from prepared.${table}`);
    }
  } finally {
    db.close();
  }
}
const onPg = PG_URL ? await postgresCopies(PG_URL) : null;
const pgAdmin = PG_URL ? new pg.Client({ connectionString: PG_URL }) : null;
await pgAdmin?.connect();
const keys = onPg ?? { apiKey, clientKeys };
/** Each Soundry server's database: its DATA_DIR's SQLite file, or a PostgreSQL database of its own. */
const databaseEnv = (name: 'before' | 'after'): Record<string, string> =>
  onPg ? { DATABASE_URL: onPg.urlOf(onPg.names[name]), SIGNING_SECRET: `bench-secret-${onPg.names.before}` } : {};
// As `npm start` runs by default (ROLE=all, LOG_LEVEL=info), unless BENCH_ROLE / BENCH_LOG_LEVEL say otherwise.
const soundryEnv = { ROLE: process.env.BENCH_ROLE ?? 'all', LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info' };
// BENCH_PORT: the first of three ports (bare, before, after), for two runs side by side on one machine.
const PORT = Number(process.env.BENCH_PORT ?? 18091);
const servers: Server[] = [{ name: 'bare', child: startNode(['bench/bare-server.ts'], { PORT: String(PORT) }), base: `http://127.0.0.1:${PORT}` }];
if (process.env.BENCH_BEFORE_MAIN) {
  servers.push({
    name: 'before',
    child: startNode([process.env.BENCH_BEFORE_MAIN], { ...soundryEnv, DATA_DIR: `${dataDir}-before`, PORT: String(PORT + 1), ...databaseEnv('before') }),
    base: `http://127.0.0.1:${PORT + 1}`,
    database: onPg?.names.before,
  });
}
servers.push({
  name: 'after',
  child: startNode(['src/main.ts'], { ...soundryEnv, DATA_DIR: dataDir, PORT: String(PORT + 2), ...databaseEnv('after') }),
  base: `http://127.0.0.1:${PORT + 2}`,
  database: onPg?.names.after,
});
const rows: string[] = [];
const dbUs = (m: Measured) => (m.dbCpuUs === null ? '-' : m.dbCpuUs.toFixed(0));
try {
  await waitHttp(`${servers[0]!.base}/`);
  for (const s of servers.slice(1)) await waitHttp(`${s.base}/healthz`);
  // A port another run already holds answers waitHttp while our server has exited (its stdout, where it logs, is ignored).
  const headers = { 'content-type': 'application/json', 'api-key': keys.apiKey };
  const bodies = new Map<string, { createBody: string; queryBody: string }>();
  for (const s of servers.slice(1)) bodies.set(s.name, await httpRequests(s.base, keys.apiKey));
  const anyBodies = [...bodies.values()][0]!;
  let next = 0;
  const createOpts = (s: Server, body: string): autocannon.Options => ({
    url: `${s.base}/audio/api/v1/api-keys/tts/task/create`,
    requests: [{ method: 'POST', body, setupRequest: (req) => ({ ...req, headers: { ...headers, 'api-key': keys.clientKeys[next++ % keys.clientKeys.length]! } }) }],
  });
  for (let round = 1; round <= ROUNDS; round++) {
    const load = process.env.BENCH_LOADAVG !== '0' ? readFileSync('/proc/loadavg', 'utf8').split(' ')[0] : '';
    const bare = await measure(servers[0]!, { url: `${servers[0]!.base}/echo`, method: 'POST', headers, body: anyBodies.queryBody });
    const half = Math.max(1, Math.round(bare.rps / 2));
    rows.push(`| ${round} | bare | ${bare.rps.toFixed(0)} | 1.00 | ${bare.p99} | ${bare.cpuUs.toFixed(0)} | ${bare.loopUs.toFixed(0)} | | | | | | | | | | ${load} |`);
    for (const s of servers.slice(1)) {
      const { createBody, queryBody } = bodies.get(s.name)!;
      const get = await measure(s, { url: `${s.base}/audio/api/v1/api-keys/tts/task/get`, method: 'POST', headers, body: queryBody });
      const create = await measure(s, createOpts(s, createBody));
      const getHalf = await measure(s, { url: `${s.base}/audio/api/v1/api-keys/tts/task/get`, method: 'POST', headers, body: queryBody, overallRate: half });
      const createHalf = await measure(s, { ...createOpts(s, createBody), overallRate: half });
      rows.push(
        `| ${round} | ${s.name} | ${get.rps.toFixed(0)} | ${(get.rps / bare.rps).toFixed(2)} | ${get.p99} | ${get.cpuUs.toFixed(0)} | ${get.loopUs.toFixed(0)} | ${dbUs(get)} | ${create.rps.toFixed(0)} | ${(create.rps / bare.rps).toFixed(2)} | ${create.p99} | ${create.cpuUs.toFixed(0)} | ${create.loopUs.toFixed(0)} | ${dbUs(create)} | ${getHalf.p99} (${getHalf.rps.toFixed(0)}/s) | ${createHalf.p99} (${createHalf.rps.toFixed(0)}/s) | ${load} |` +
          (get.errors + create.errors ? ` errors ${get.errors + create.errors}` : ''),
      );
      console.error(rows.at(-1));
    }
  }
  const database = onPg ? 'PostgreSQL (a database per server, SQL queue, no Redis)' : 'embedded SQLite';
  console.log(`Machine: ${machine()}. ${database}, ROLE=${soundryEnv.ROLE}, LOG_LEVEL=${soundryEnv.LOG_LEVEL}. ${CONNECTIONS} connections, ${SECONDS} s per load. Measured ${new Date().toISOString()}.\n`);
  console.log('| round | server | get req/s | get ratio | get p99 ms | get CPU us/req | get loop CPU us/req | get DB CPU us/req | create req/s | create ratio | create p99 ms | create CPU us/req | create loop CPU us/req | create DB CPU us/req | get p99 at half bare rate | create p99 at half bare rate | load avg |');
  console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const r of rows) console.log(r);
} finally {
  for (const s of servers) {
    s.child.kill('SIGCONT');
    s.child.kill('SIGTERM');
  }
  await new Promise((r) => setTimeout(r, 1000));
  await rm(dataDir, { recursive: true, force: true });
  await rm(`${dataDir}-before`, { recursive: true, force: true });
  await pgAdmin?.end();
  if (PG_URL && onPg) for (const name of [onPg.names.after, onPg.names.before]) await asAdmin(PG_URL, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
}
