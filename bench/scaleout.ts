/**
 * The scale-out profile against the embedded one, all in one run (`npm run bench -- scaleout`):
 *
 *  A. Tasks per second through the queue, end to end: short TTS texts created by a fixed number of
 *     clients (each creates, polls until success, creates the next), on the embedded profile (one
 *     ROLE=all process, SQLite, SQL queue) and on one ROLE=api + two ROLE=worker processes on
 *     PostgreSQL + Redis/BullMQ. Each round runs both back to back (ABBA order); the ratio is scale-out /
 *     embedded over all rounds and per round.
 *  B. Create and query throughput (autocannon) of a ROLE=api node on SQLite, on PostgreSQL, and on
 *     PostgreSQL + Redis, as ratios of a bare Fastify route measured in the same run (first, between
 *     two passes in opposite orders, and last).
 *  C. Fairness: long tasks (enhancements with every rendering flag, separations 320) fill the queue, then
 *     short TTS tasks arrive one by one; their create-to-success wait against their own processing time.
 *     Optionally (BENCH_OLD_COMMIT=<commit>, e.g. 789f03d: main before 'Engine threads in two lanes'
 *     and the work-queue merge) also the code from before the per-kind slots and the engine-thread
 *     lanes (embedded profile only), checked out into a temporary git worktree removed afterwards.
 *
 * Blobs: BLOB_STORE=local, the API and both workers share one DATA_DIR (one machine). Each run gets
 * its own PostgreSQL databases (dropped afterwards) and its own Redis key prefixes (deleted afterwards).
 * Environment: BENCH_PARTS (http,throughput,fairness), BENCH_TASKS, BENCH_CLIENTS, BENCH_ROUNDS,
 * BENCH_SECONDS (autocannon), BENCH_LONG_SECONDS, BENCH_SHORT, BENCH_OLD_COMMIT.
 */
import autocannon from 'autocannon';
import { execFile, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, realpath, rm, symlink } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { openSqlite } from '../src/adapters/sqlite/database.js';
import { openPostgres } from '../src/adapters/postgres/database.js';
import { SqlAccountStore } from '../src/adapters/sql/account-store.js';
import { issueApiKey } from '../src/services/auth.js';
import { resolveMediaTools } from '../src/media/ffmpeg.js';
import { createTestDatabase, type TestDatabase } from '../test/helpers/postgres.js';
import { machine, median, root, startNode, waitHttp, writeResult } from './lib.js';

const run = promisify(execFile);

const PARTS = (process.env.BENCH_PARTS ?? 'http,throughput,fairness').split(',').map((s) => s.trim());
const TASKS = Number(process.env.BENCH_TASKS ?? 60);
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 8);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 8);
const HTTP_SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = 10;
const LONG_SECONDS = Number(process.env.BENCH_LONG_SECONDS ?? 60);
const LONG_ENHANCE = Number(process.env.BENCH_LONG_ENHANCE ?? 4);
const LONG_SEPARATION = Number(process.env.BENCH_LONG_SEPARATION ?? 2);
const SHORT = Number(process.env.BENCH_SHORT ?? 8);
const SHORT_GAP_MS = 2000;
/** A short task still waiting after this long is reported as unfinished (its wait is at least this). */
const FAIR_CAP_S = Number(process.env.BENCH_FAIR_CAP_S ?? 150);
const OLD_COMMIT = process.env.BENCH_OLD_COMMIT;
const PG_ADMIN = process.env.TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const SIGNING_SECRET = randomBytes(24).toString('hex');
const API = '/audio/api/v1/api-keys';
const SENTENCE = (i: number) => `The weather report for station ${i} is calm and clear.`;
const ENHANCE_FLAGS = ['remove_background_audio', 'remove_noise', 'remove_reverb', 'mouth_sounds', 'fillers', 'hesitations', 'stutters', 'long_silences', 'autoeq', 'normalize'];
const KEY_LIMITS = { credits: 1e9, rateLimit: 1e6, concurrency: 10_000 };

let nextPort = 18300;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const now = () => performance.now();
const load = () => loadavg()[0]!.toFixed(2);

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  if (!s.length) return NaN;
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}
const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);

// ---------------------------------------------------------------------------------------------
// Processes and profiles

async function stopProcess(p: ChildProcess): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null) return;
  const exited = new Promise<void>((r) => p.once('exit', () => r()));
  p.kill('SIGTERM');
  const hard = setTimeout(() => p.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(hard);
}

interface Profile {
  label: string;
  base: string;
  /** Nodes that run workers (their /metrics has the task durations). */
  workerBases: string[];
  keys: string[];
  voiceId: number;
  /** The profile's Soundry processes (for their CPU time). */
  pids: number[];
  stop(): Promise<void>;
}

/**
 * CPU seconds (user + system) of these processes and of their children that have ended (ffmpeg
 * encoders), from /proc (Linux; NaN elsewhere). PostgreSQL's and Redis's own CPU is not in it.
 */
async function cpuSeconds(pids: number[]): Promise<number> {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // Fields 14-17 of stat (utime, stime, cutime, cstime) are 11-14 after the command name.
      ticks += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
    } catch {
      return NaN;
    }
  }
  return ticks / 100; // USER_HZ is 100 on Linux
}

async function issueKeys(db: Awaited<ReturnType<typeof openSqlite>>, n: number): Promise<string[]> {
  const accounts = new SqlAccountStore(db);
  const keys: string[] = [];
  for (let i = 0; i < n; i++) keys.push((await issueApiKey(accounts, KEY_LIMITS)).apiKey);
  return keys;
}

async function firstVoice(base: string, key: string): Promise<number> {
  const res = (await (await fetch(`${base}${API}/tts/voices?language=en`, { headers: { 'api-key': key } })).json()) as any;
  return res.data.records[0].id;
}

const quiet = { NODE_NO_WARNINGS: '1', LOG_LEVEL: 'error', SHUTDOWN_GRACE_SECONDS: '1', REAPER_INTERVAL_SECONDS: '86400' };

/** One ROLE=all process on SQLite under a fresh DATA_DIR (cwd: another checkout for the old code). */
async function embeddedProfile(label: string, nKeys: number, cwd = root, extraEnv: Record<string, string> = {}): Promise<Profile> {
  const dataDir = await mkdtemp(join(tmpdir(), 'soundry-bench-emb-'));
  let keys: string[];
  if (cwd === root) {
    const db = await openSqlite(join(dataDir, 'soundry.db'));
    keys = await issueKeys(db, nKeys);
    await db.destroy();
  } else {
    // Another version's schema: let its own CLI create the database and the keys.
    keys = [];
    for (let i = 0; i < nKeys; i++) {
      const { stdout } = await run(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'keys', 'create', '--credits', String(KEY_LIMITS.credits), '--rate-limit', String(KEY_LIMITS.rateLimit), '--concurrency', String(KEY_LIMITS.concurrency)], {
        cwd,
        env: { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'error' },
      });
      keys.push((JSON.parse(stdout.trim().split('\n').at(-1)!) as { api_key: string }).api_key);
    }
  }
  const port = nextPort++;
  const base = `http://127.0.0.1:${port}`;
  const proc = startNode(['src/main.ts'], { ...quiet, ...extraEnv, ROLE: 'all', DATA_DIR: dataDir, PORT: String(port) }, cwd);
  await waitHttp(`${base}/healthz`, 60_000);
  return {
    label,
    base,
    workerBases: [base],
    keys,
    voiceId: await firstVoice(base, keys[0]!),
    pids: [proc.pid!],
    async stop() {
      await stopProcess(proc);
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

async function deleteRedisKeys(patterns: string[]): Promise<void> {
  const admin = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  try {
    for (const match of patterns) {
      for await (const keys of admin.scanStream({ match, count: 1000 })) {
        if ((keys as string[]).length) await admin.unlink(...(keys as string[]));
      }
    }
  } finally {
    await admin.quit();
  }
}

/**
 * ROLE=api plus `workers` ROLE=worker processes on a fresh PostgreSQL database, with Redis (BullMQ
 * queues, shared limits) under fresh prefixes unless `redis` is false. One DATA_DIR for all (local blobs).
 */
async function scaleoutProfile(label: string, opts: { workers: number; redis: boolean; keys: number }): Promise<Profile> {
  const pg: TestDatabase = await createTestDatabase();
  const dataDir = await mkdtemp(join(tmpdir(), 'soundry-bench-so-'));
  const tag = randomBytes(5).toString('hex');
  const queuePrefix = `soundry-bench-${tag}`;
  const keyPrefix = `soundry-bench:${tag}:`;
  const procs: ChildProcess[] = [];
  const stop = async () => {
    await Promise.all(procs.map(stopProcess));
    await pg.drop();
    if (opts.redis) await deleteRedisKeys([`${queuePrefix}:*`, `${keyPrefix}*`]);
    await rm(dataDir, { recursive: true, force: true });
  };
  try {
    const db = await openPostgres(pg.url);
    const keys = await issueKeys(db, opts.keys);
    await db.destroy();
    const apiPort = nextPort++;
    const base = `http://127.0.0.1:${apiPort}`;
    const env = {
      ...quiet,
      DATABASE_URL: pg.url,
      SIGNING_SECRET,
      DATA_DIR: dataDir,
      BLOB_STORE: 'local',
      PUBLIC_BASE_URL: base,
      ...(opts.redis ? { REDIS_URL, QUEUE_PREFIX: queuePrefix, REDIS_KEY_PREFIX: keyPrefix } : {}),
    };
    procs.push(startNode(['src/main.ts'], { ...env, ROLE: 'api', PORT: String(apiPort) }));
    const workerBases: string[] = [];
    for (let i = 0; i < opts.workers; i++) {
      const port = nextPort++;
      workerBases.push(`http://127.0.0.1:${port}`);
      procs.push(startNode(['src/main.ts'], { ...env, ROLE: 'worker', PORT: String(port) }));
    }
    await waitHttp(`${base}/healthz`, 60_000);
    for (const w of workerBases) await waitHttp(`${w}/healthz`, 60_000);
    return { label, base, workerBases, keys, voiceId: await firstVoice(base, keys[0]!), pids: procs.map((p) => p.pid!), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

// ---------------------------------------------------------------------------------------------
// Client

async function call(base: string, path: string, key: string, body: unknown): Promise<any> {
  const res = await fetch(`${base}${API}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'api-key': key }, body: JSON.stringify(body) });
  return res.json();
}

async function createTts(p: Profile, key: string, text: string): Promise<string> {
  const r = await call(p.base, '/tts/task/create', key, { voice_id: p.voiceId, emotion: 0, speed: 1, language: 'en', text });
  if (r.code !== 100000) throw new Error(`${p.label}: tts create answered ${r.code} ${r.message}`);
  return r.data.job_id;
}

/** Polls until success; the time of success (performance.now()), or null past the deadline. */
async function untilDone(p: Profile, kind: 'tts' | 'enhance' | 'separation', key: string, id: string, pollMs: number, deadline = Infinity): Promise<number | null> {
  for (;;) {
    const r = await call(p.base, `/${kind}/task/get`, key, kind === 'tts' ? { global_id: id } : { job_id: id });
    if (r.code !== 100000) throw new Error(`${p.label}: ${kind} get answered ${r.code} ${r.message}`);
    if (r.data.status === 'success') return now();
    if (r.data.status === 'failed') throw new Error(`${p.label}: ${kind} task ${id} failed: ${r.data.error ?? ''}`);
    if (now() > deadline) return null;
    await sleep(pollMs);
  }
}

/** One short TTS task end to end: create-to-success milliseconds (null: still waiting at the deadline). */
async function ttsOnce(p: Profile, key: string, text: string, pollMs: number, deadline = Infinity): Promise<number | null> {
  const t0 = now();
  const id = await createTts(p, key, text);
  const done = await untilDone(p, 'tts', key, id, pollMs, deadline);
  return done === null ? null : done - t0;
}

// ---------------------------------------------------------------------------------------------
// A. Tasks per second

interface Batch { label: string; round: number; tasks: number; seconds: number; cpu: number; latencies: number[]; loadBefore: string; loadAfter: string }

async function batch(p: Profile, n: number, clients: number, round: number): Promise<Batch> {
  const latencies: number[] = [];
  let next = 0;
  const loadBefore = load();
  const cpu0 = await cpuSeconds(p.pids);
  const t0 = now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      for (;;) {
        const i = next++;
        if (i >= n) return;
        latencies.push((await ttsOnce(p, p.keys[i % p.keys.length]!, SENTENCE(i), 50))!);
      }
    }),
  );
  const seconds = (now() - t0) / 1000;
  return { label: p.label, round, tasks: n, seconds, cpu: (await cpuSeconds(p.pids)) - cpu0, latencies, loadBefore, loadAfter: load() };
}

async function partThroughput(): Promise<string[]> {
  const embedded = await embeddedProfile('embedded: 1 x ROLE=all, SQLite, SQL queue', 16);
  let scaled: Profile | null = null;
  try {
    scaled = await scaleoutProfile('scale-out: 1 x ROLE=api + 2 x ROLE=worker, Postgres + Redis/BullMQ', { workers: 2, redis: true, keys: 16 });
    // Warm-up (not reported): engine threads start and load on first use, in every worker.
    for (const p of [embedded, scaled]) await batch(p, 2 * CLIENTS, CLIENTS, 0);
    const batches: Batch[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const order = round % 2 === 1 ? [embedded, scaled] : [scaled, embedded];
      for (const p of order) {
        const b = await batch(p, TASKS, CLIENTS, round);
        console.error(`throughput ${b.label} round ${round}: ${(b.tasks / b.seconds).toFixed(2)} tasks/s`);
        batches.push(b);
      }
    }
    const total = (label: string) => {
      const bs = batches.filter((b) => b.label === label);
      const tasks = bs.reduce((a, b) => a + b.tasks, 0);
      const seconds = bs.reduce((a, b) => a + b.seconds, 0);
      const lat = bs.flatMap((b) => b.latencies);
      const cpu = bs.reduce((a, b) => a + b.cpu, 0);
      return { tasks, seconds, rate: tasks / seconds, p50: percentile(lat, 50), p95: percentile(lat, 95), cpuPerTask: (cpu / tasks) * 1000 };
    };
    const scaledLabel = scaled.label;
    const e = total(embedded.label);
    const s = total(scaledLabel);
    // Each round measures both profiles back to back: the ratio within a round shares most of the machine's drift.
    const perRound = Array.from({ length: ROUNDS }, (_, i) => {
      const b = (label: string) => batches.find((x) => x.round === i + 1 && x.label === label)!;
      const [be, bs] = [b(embedded.label), b(scaledLabel)];
      return bs.tasks / bs.seconds / (be.tasks / be.seconds);
    });
    return [
      `## A. Tasks per second through the queue, end to end`,
      ``,
      `${TASKS} short TTS tasks per round (one English sentence, ${SENTENCE(0).length} characters, MP3, the first built-in English voice), ${CLIENTS} clients each creating a task, polling \`tts/task/get\` every 50 ms until success, then creating the next; tasks rotate over 16 keys with limits far above the load. ${ROUNDS} rounds; each runs both profiles back to back, in alternating order (ABBA...), after a warm-up batch of ${2 * CLIENTS} tasks on each (not counted). Both profiles' processes stay up for the whole part (the idle one waits on its queue). Latency is create-to-success as the client sees it (includes up to 50 ms of polling granularity). Worker settings are the defaults: per worker process 2 TTS slots (WORKER_SHORT_CONCURRENCY) and 1 short-lane engine thread, so the embedded profile has 1 TTS engine thread and the scale-out profile 2 (one per worker), on the same 2 cores.`,
      ``,
      `| round | profile | tasks | seconds | tasks/s | p50 ms | p95 ms | Soundry CPU ms per task | load (1 min) before / after | ratio in round (scale-out / embedded) |`,
      `|---|---|---|---|---|---|---|---|---|---|`,
      ...batches.map((b) => `| ${b.round} | ${b.label} | ${b.tasks} | ${b.seconds.toFixed(1)} | ${(b.tasks / b.seconds).toFixed(2)} | ${percentile(b.latencies, 50).toFixed(0)} | ${percentile(b.latencies, 95).toFixed(0)} | ${((b.cpu / b.tasks) * 1000).toFixed(0)} | ${b.loadBefore} / ${b.loadAfter} | ${b.label === scaledLabel ? perRound[b.round - 1]!.toFixed(2) : ''} |`),
      ``,
      `| profile | tasks | tasks/s (all rounds) | p50 ms | p95 ms | Soundry CPU ms per task |`,
      `|---|---|---|---|---|---|`,
      `| ${embedded.label} (baseline) | ${e.tasks} | ${e.rate.toFixed(2)} | ${e.p50.toFixed(0)} | ${e.p95.toFixed(0)} | ${e.cpuPerTask.toFixed(0)} |`,
      `| ${scaled.label} | ${s.tasks} | ${s.rate.toFixed(2)} | ${s.p50.toFixed(0)} | ${s.p95.toFixed(0)} | ${s.cpuPerTask.toFixed(0)} |`,
      ``,
      `**Ratio scale-out / embedded: ${(s.rate / e.rate).toFixed(2)} in tasks/s over all rounds; per round median ${median(perRound).toFixed(2)} (from ${Math.min(...perRound).toFixed(2)} to ${Math.max(...perRound).toFixed(2)})**. p50 latency ${(s.p50 / e.p50).toFixed(2)}, p95 latency ${(s.p95 / e.p95).toFixed(2)}, Soundry CPU per task ${(s.cpuPerTask / e.cpuPerTask).toFixed(2)}. Soundry CPU: user + system time of the profile's Soundry processes and their finished children (ffmpeg), from /proc; PostgreSQL's and Redis's own CPU is not counted.`,
      ``,
    ];
  } finally {
    await embedded.stop();
    await scaled?.stop();
  }
}

// ---------------------------------------------------------------------------------------------
// B. Create and query throughput

interface HttpRow { server: string; route: string; rps: number; p99: number; errors: number; non2xx: number; load: string }

async function cannon(server: string, route: string, opts: autocannon.Options): Promise<HttpRow> {
  const r = await autocannon({ duration: HTTP_SECONDS, connections: CONNECTIONS, ...opts });
  const row = { server, route, rps: r.requests.average, p99: r.latency.p99, errors: r.errors, non2xx: r.non2xx, load: load() };
  console.error(`http ${server} ${route}: ${row.rps.toFixed(0)} req/s, p99 ${row.p99} ms`);
  return row;
}

async function partHttp(): Promise<string[]> {
  const barePort = nextPort++;
  const bare = startNode(['bench/bare-server.ts'], { PORT: String(barePort) });
  const servers: Profile[] = [];
  try {
    // 1 key for queries + 200 for creates (one key with thousands of unfinished tasks is not a real workload).
    servers.push(await embeddedApi('SQLite (ROLE=api, embedded)', 201));
    servers.push(await scaleoutProfile('Postgres (ROLE=api, SQL queue, limits in process)', { workers: 0, redis: false, keys: 201 }));
    servers.push(await scaleoutProfile('Postgres + Redis (ROLE=api, BullMQ, shared limits)', { workers: 0, redis: true, keys: 201 }));
    await waitHttp(`http://127.0.0.1:${barePort}/`);
    const queries = new Map<Profile, string>();
    for (const s of servers) {
      const id = await createTts(s, s.keys[0]!, 'Benchmark sentence.');
      queries.set(s, JSON.stringify({ global_id: id }));
    }
    const headers = (key: string) => ({ 'content-type': 'application/json', 'api-key': key });
    const bareRow = () =>
      cannon('bare Fastify (baseline)', 'POST /echo', { url: `http://127.0.0.1:${barePort}/echo`, method: 'POST', headers: headers(servers[0]!.keys[0]!), body: queries.get(servers[0]!)! });
    const getRow = (s: Profile) =>
      cannon(s.label, 'tts/task/get', { url: `${s.base}${API}/tts/task/get`, method: 'POST', headers: headers(s.keys[0]!), body: queries.get(s)! });
    const createRow = (s: Profile) => {
      let next = 0;
      const body = JSON.stringify({ voice_id: s.voiceId, emotion: 0, speed: 1, language: 'en', text: 'Benchmark sentence.' });
      const clientKeys = s.keys.slice(1);
      return cannon(s.label, 'tts/task/create (200 keys)', {
        url: `${s.base}${API}/tts/task/create`,
        requests: [{ method: 'POST', body, setupRequest: (req) => ({ ...req, headers: headers(clientKeys[next++ % clientKeys.length]!) }) }],
      });
    };
    // Two passes, the second in the reverse order, so a drift in the machine's load falls on every server alike.
    const rows: HttpRow[] = [await bareRow()];
    for (const s of servers) rows.push(await getRow(s));
    for (const s of servers) rows.push(await createRow(s));
    rows.push(await bareRow());
    for (const s of [...servers].reverse()) rows.push(await createRow(s));
    for (const s of [...servers].reverse()) rows.push(await getRow(s));
    rows.push(await bareRow());
    const bares = rows.filter((r) => r.route === 'POST /echo');
    const baseRps = mean(bares.map((r) => r.rps));
    const baseP99 = mean(bares.map((r) => r.p99));
    const summary = [{ server: 'bare Fastify (baseline)', route: 'POST /echo' }, ...['tts/task/get', 'tts/task/create (200 keys)'].flatMap((route) => servers.map((s) => ({ server: s.label, route })))].map(({ server, route }) => {
      const rs = rows.filter((r) => r.server === server && r.route === route);
      return { server, route, rps: mean(rs.map((r) => r.rps)), p99: mean(rs.map((r) => r.p99)), errors: rs.reduce((a, r) => a + r.errors, 0), non2xx: rs.reduce((a, r) => a + r.non2xx, 0), n: rs.length };
    });
    return [
      `## B. Create and query throughput of one API node`,
      ``,
      `autocannon in the bench process, ${CONNECTIONS} connections, ${HTTP_SECONDS} s per row, each server in its own process, no worker running (creates pile up as queued tasks). PostgreSQL, Redis, the servers and autocannon all share the 2 cores. Two passes, the second in reverse order; the bare Fastify route is measured first, between the passes and last. Ratios are to the mean of the bare rows (${baseRps.toFixed(0)} req/s, p99 ${baseP99.toFixed(1)} ms).`,
      ``,
      `| server | route | req/s (mean of its rows) | ratio to bare | p99 ms | p99 ratio | errors / non-2xx |`,
      `|---|---|---|---|---|---|---|`,
      ...summary.map((r) => `| ${r.server} | ${r.route} | ${r.rps.toFixed(0)} | ${(r.rps / baseRps).toFixed(3)} | ${r.p99.toFixed(0)} | ${baseP99 > 0 ? (r.p99 / baseP99).toFixed(1) : 'n/a'} | ${r.errors} / ${r.non2xx} |`),
      ``,
      `Every row in the order it ran:`,
      ``,
      `| server | route | req/s | p99 ms | errors / non-2xx | load (1 min) after |`,
      `|---|---|---|---|---|---|`,
      ...rows.map((r) => `| ${r.server} | ${r.route} | ${r.rps.toFixed(0)} | ${r.p99} | ${r.errors} / ${r.non2xx} | ${r.load} |`),
      ``,
    ];
  } finally {
    await stopProcess(bare);
    for (const s of servers) await s.stop();
  }
}

/** ROLE=api on SQLite (for B: no worker takes the tasks). */
async function embeddedApi(label: string, nKeys: number): Promise<Profile> {
  const dataDir = await mkdtemp(join(tmpdir(), 'soundry-bench-api-'));
  const db = await openSqlite(join(dataDir, 'soundry.db'));
  const keys = await issueKeys(db, nKeys);
  await db.destroy();
  const port = nextPort++;
  const base = `http://127.0.0.1:${port}`;
  const proc = startNode(['src/main.ts'], { ...quiet, ROLE: 'api', DATA_DIR: dataDir, PORT: String(port) });
  await waitHttp(`${base}/healthz`, 60_000);
  return {
    label,
    base,
    workerBases: [],
    keys,
    voiceId: await firstVoice(base, keys[0]!),
    pids: [proc.pid!],
    async stop() {
      await stopProcess(proc);
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

// ---------------------------------------------------------------------------------------------
// C. Fairness

/** Sum and count of the TTS handler durations (slot taken to done) on the nodes that run workers. */
async function ttsHandlerSeconds(p: Profile): Promise<{ sum: number; count: number }> {
  let sum = 0;
  let count = 0;
  for (const b of p.workerBases) {
    const text = await (await fetch(`${b}/metrics`)).text();
    for (const line of text.split('\n')) {
      if (!line.includes('kind="tts"') || !line.includes('status="success"')) continue;
      const value = Number(line.split(' ').at(-1));
      if (line.startsWith('soundry_task_duration_seconds_sum{')) sum += value;
      if (line.startsWith('soundry_task_duration_seconds_count{')) count += value;
    }
  }
  return { sum, count };
}

async function makeLongInput(): Promise<Buffer> {
  const dir = await mkdtemp(join(tmpdir(), 'soundry-bench-long-'));
  try {
    const speech = `${root}../shared/corpus/speech/conversational/pyannote_sample_telephone.wav`;
    const music = `${root}../shared/corpus/separation/mixture_only_real_songs/demucs_test.mp3`;
    const out = join(dir, 'long.wav');
    // Speech looped with a music bed 12 dB under it, 16 kHz mono 16-bit WAV (as bench/enhance-production.ts).
    await run(resolveMediaTools({ preferSystem: true }).ffmpeg, ['-v', 'error', '-stream_loop', '-1', '-i', speech, '-stream_loop', '-1', '-i', music, '-filter_complex',
      '[1:a]volume=-12dB[m];[0:a][m]amix=inputs=2:duration=first,volume=2', '-t', String(LONG_SECONDS), '-ac', '1', '-ar', '16000', '-c:a', 'pcm_s16le', out]);
    return await readFile(out);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

interface FairRow {
  label: string;
  idleMs: number[];
  waits: (number | null)[];
  handler: { sum: number; count: number };
  longDone: number[];
  /** Each long task's progress (0..1, 1 = done) at the end of the window. */
  longProgress: number[];
  /** From the long tasks' creation to the last short task's success. */
  windowS: number;
  loadBefore: string;
  loadAfter: string;
}

async function fairness(p: Profile, input: Buffer): Promise<FairRow> {
  const [longKey, shortKey] = [p.keys[0]!, p.keys[1]!];
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(input)], { type: 'audio/wav' }), 'long.wav');
  const up = (await (await fetch(`${p.base}${API}/files/upload`, { method: 'POST', headers: { 'api-key': longKey }, body: form })).json()) as any;
  if (up.code !== 100000) throw new Error(`${p.label}: upload answered ${up.code} ${up.message}`);
  const inputurl: string = up.data.url;
  // The short task's own time: the same task on the idle profile (after two warm-ups).
  for (let i = 0; i < 2; i++) await ttsOnce(p, shortKey, SENTENCE(900 + i), 25);
  const idleMs: number[] = [];
  for (let i = 0; i < 5; i++) idleMs.push((await ttsOnce(p, shortKey, SENTENCE(910 + i), 25))!);
  const loadBefore = load();

  // The long tasks, all queued at once.
  const windowStart = now();
  let stopped = false;
  const longDone: number[] = [];
  const longFailed: string[] = [];
  const longProgress: number[] = [];
  const longWatchers: Promise<void>[] = [];
  const createLong = async (kind: 'enhance' | 'separation', body: object) => {
    const t0 = now();
    const r = await call(p.base, `/${kind}/task/create`, longKey, body);
    if (r.code !== 100000) throw new Error(`${p.label}: ${kind} create answered ${r.code} ${r.message}`);
    const slot = longProgress.push(0) - 1;
    longWatchers.push(
      (async () => {
        while (!stopped) {
          const g = await call(p.base, `/${kind}/task/get`, longKey, { job_id: r.data.job_id });
          if (g.data?.status === 'success') return void (longProgress[slot] = 1, longDone.push((now() - t0) / 1000));
          if (typeof g.data?.progress === 'number') longProgress[slot] = g.data.progress;
          if (g.data?.status === 'failed') return void longFailed.push(`${kind}: ${g.data.error}`);
          await sleep(1000);
        }
      })().catch((err: unknown) => void longFailed.push(`${kind}: ${String(err)}`)),
    );
  };
  for (let i = 0; i < LONG_ENHANCE; i++) await createLong('enhance', { inputurl, enhance_type: Object.fromEntries(ENHANCE_FLAGS.map((f) => [f, true])) });
  for (let i = 0; i < LONG_SEPARATION; i++) await createLong('separation', { inputurl, model_type: 320 });
  await sleep(3000); // the long tasks have started

  const before = await ttsHandlerSeconds(p);
  const deadline = now() + FAIR_CAP_S * 1000;
  const shorts: Promise<number | null>[] = [];
  for (let i = 0; i < SHORT; i++) {
    shorts.push(ttsOnce(p, shortKey, SENTENCE(100 + i), 100, deadline));
    if (i < SHORT - 1) await sleep(SHORT_GAP_MS);
  }
  const waits = await Promise.all(shorts);
  const windowS = (now() - windowStart) / 1000;
  const after = await ttsHandlerSeconds(p);
  const loadAfter = load();
  await sleep(1100); // one more progress reading of each long task
  const progressAtEnd = [...longProgress];
  stopped = true;
  await Promise.all(longWatchers);
  if (longFailed.length) throw new Error(`${p.label}: long tasks failed: ${longFailed.join('; ')}`);
  console.error(`fairness ${p.label}: waits ${waits.map((w) => (w === null ? 'unfinished' : (w / 1000).toFixed(1))).join(', ')} s`);
  return { label: p.label, idleMs, waits, handler: { sum: after.sum - before.sum, count: after.count - before.count }, longDone, longProgress: progressAtEnd, loadBefore, loadAfter, windowS };
}

/** The code at `commit` in a temporary worktree (node_modules shared), removed by the returned function. */
async function checkout(commit: string): Promise<{ dir: string; remove(): Promise<void> }> {
  const dir = join(tmpdir(), `soundry-bench-old-${randomBytes(4).toString('hex')}`);
  await run('git', ['-C', root, 'worktree', 'add', '--detach', dir, commit]);
  await symlink(await realpath(join(root, 'node_modules')), join(dir, 'node_modules'));
  return {
    dir,
    async remove() {
      await run('git', ['-C', root, 'worktree', 'remove', '--force', dir]);
    },
  };
}

async function partFairness(): Promise<string[]> {
  const input = await makeLongInput();
  const rows: FairRow[] = [];
  const profiles: { label: string; make: () => Promise<Profile> }[] = [
    { label: 'embedded (per-kind slots, thread lanes)', make: () => embeddedProfile('embedded (per-kind slots, thread lanes)', 2) },
    { label: 'scale-out 1 API + 2 workers (per-kind slots, thread lanes)', make: () => scaleoutProfile('scale-out 1 API + 2 workers, Postgres + BullMQ (per-kind slots, thread lanes)', { workers: 2, redis: true, keys: 2 }) },
  ];
  let old: Awaited<ReturnType<typeof checkout>> | null = null;
  let oldSubject = '';
  if (OLD_COMMIT) {
    old = await checkout(OLD_COMMIT);
    oldSubject = (await run('git', ['-C', root, 'log', '-1', '--format=%h %s', OLD_COMMIT])).stdout.trim().split(':')[0]!;
    const dir = old.dir;
    profiles.push({ label: `embedded at ${OLD_COMMIT} (before)`, make: () => embeddedProfile(`embedded at ${OLD_COMMIT} (one slot pool, one thread pool)`, 2, dir) });
  }
  try {
    for (const pr of profiles) {
      const p = await pr.make();
      try {
        rows.push(await fairness(p, input));
      } finally {
        await p.stop();
      }
    }
  } finally {
    await old?.remove();
  }
  const fmt = (ms: number) => (ms / 1000).toFixed(2);
  return [
    `## C. Fairness: short tasks behind long ones`,
    ``,
    `Long load: ${LONG_ENHANCE} enhancements with ${ENHANCE_FLAGS.length} flags (${ENHANCE_FLAGS.join(', ')}) and ${LONG_SEPARATION} separations (model_type 320, built-in engine) of one ${LONG_SECONDS} s 16 kHz mono WAV (corpus telephone speech over a music bed 12 dB down), uploaded with files/upload, all created at once. 3 s later, ${SHORT} short TTS tasks (one sentence each) arrive ${SHORT_GAP_MS / 1000} s apart, each polled every 100 ms; a short task still waiting ${FAIR_CAP_S} s after the first arrived counts as unfinished. Own time: create-to-success of the same short task on the same idle profile just before (median of 5, after 2 warm-ups). Handler time: the workers' own soundry_task_duration_seconds for those TTS tasks (slot taken to done, which includes any wait for an engine thread), from /metrics. Window: from the first long task's creation to the last short task's success; then each long task's \`progress\` as its get answers it (100% = done), to show the long tasks were running and not starved. Default worker settings: WORKER_CONCURRENCY=2 per long kind, WORKER_SHORT_CONCURRENCY=2, WORKER_THREADS=2 (2 cores).${old ? ` The old code is \`${oldSubject}\`, run from a temporary git worktree (removed afterwards): one pool of WORKER_CONCURRENCY=2 slots for every kind, first come first served, and one engine thread pool.` : ''}`,
    ``,
    `| profile | own time (idle) s | short tasks | wait avg s | wait p50 s | wait max s | unfinished | wait avg / own time | TTS handler mean s (under load) | window s | long tasks done; progress of each at the end | load (1 min) before / after |`,
    `|---|---|---|---|---|---|---|---|---|---|---|---|`,
    ...rows.map((r) => {
      const done = r.waits.filter((w): w is number => w !== null);
      const own = median(r.idleMs);
      return `| ${r.label} | ${fmt(own)} | ${r.waits.length} | ${fmt(mean(done))} | ${fmt(percentile(done, 50))} | ${fmt(Math.max(...done))} | ${r.waits.length - done.length} | ${(mean(done) / own).toFixed(1)} | ${r.handler.count ? (r.handler.sum / r.handler.count).toFixed(2) : 'n/a'} (${r.handler.count} tasks) | ${r.windowS.toFixed(0)} | ${r.longDone.length} of ${r.longProgress.length}${r.longDone.length ? ` (after ${r.longDone.map((s) => s.toFixed(0)).join(', ')} s)` : ''}; ${r.longProgress.map((x) => `${Math.round(x * 100)}%`).join(' ')} | ${r.loadBefore} / ${r.loadAfter} |`;
    }),
    ``,
  ];
}

// ---------------------------------------------------------------------------------------------

export async function benchScaleout(): Promise<string> {
  const started = new Date();
  const uptime = (await run('uptime')).stdout.trim();
  // Run order B, A, C (the HTTP part first, on a machine not yet holding this bench's processes); written A, B, C.
  const http = PARTS.includes('http') ? await partHttp() : [];
  const throughput = PARTS.includes('throughput') ? await partThroughput() : [];
  const fair = PARTS.includes('fairness') ? await partFairness() : [];
  const sections = [...throughput, ...http, ...fair];
  const lines = [
    `# Scale-out profile against the embedded one`,
    ``,
    `Machine: ${machine()}. Shared with other jobs while measured: \`uptime\` at the start: \`${uptime}\`; the 1-minute load average is noted next to each result. Command: \`${OLD_COMMIT ? `BENCH_OLD_COMMIT=${OLD_COMMIT} ` : ''}npm run bench -- scaleout\`${PARTS.length < 3 ? ` (BENCH_PARTS=${PARTS.join(',')})` : ''}. Measured ${started.toISOString()}, ${((Date.now() - started.getTime()) / 60_000).toFixed(1)} minutes in all.`,
    ``,
    `PostgreSQL ${PG_ADMIN.replace(/\/\/[^@]*@/, '//')} (a fresh database per profile, dropped afterwards) and Redis ${REDIS_URL} (fresh QUEUE_PREFIX and REDIS_KEY_PREFIX per profile, deleted afterwards), both on this machine. Blobs: BLOB_STORE=local, the API and the workers sharing one DATA_DIR (one machine). Every process runs from source under tsx, LOG_LEVEL=error. Parts ran in the order B, A, C.`,
    ``,
    ...sections,
  ];
  return writeResult('scaleout', lines.join('\n'));
}
