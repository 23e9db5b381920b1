/**
 * HTTP throughput and p99 latency of Soundry's create and query operations, as ratios of a bare
 * Fastify route measured in the same run (servers in child processes, load from this one).
 */
import autocannon from 'autocannon';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Kysely } from 'kysely';
import { openSqlite } from '../src/adapters/sqlite/database.js';
import type { Database } from '../src/adapters/sql/schema.js';
import { SqlAccountStore } from '../src/adapters/sql/account-store.js';
import { issueApiKey } from '../src/services/auth.js';
import { machine, startNode, waitHttp, writeResult } from './lib.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);

interface Row { name: string; rps: number; p99: number; errors: number; non2xx: number }

async function load(name: string, opts: autocannon.Options): Promise<Row> {
  const r = await autocannon({ duration: SECONDS, connections: CONNECTIONS, ...opts });
  return { name, rps: r.requests.average, p99: r.latency.p99, errors: r.errors, non2xx: r.non2xx };
}

/** A fresh embedded database with one key for queries and 200 client keys for creates. */
export async function prepareHttpData(): Promise<{ dataDir: string; apiKey: string; clientKeys: string[] }> {
  const dataDir = await mkdtemp(join(tmpdir(), 'soundry-bench-'));
  const db = await openSqlite(join(dataDir, 'soundry.db'));
  try {
    return { dataDir, ...(await issueBenchKeys(db)) };
  } finally {
    await db.destroy();
  }
}

/** One key for queries and 200 client keys for creates, in a migrated database of either kind. */
export async function issueBenchKeys(db: Kysely<Database>): Promise<{ apiKey: string; clientKeys: string[] }> {
  const accounts = new SqlAccountStore(db);
  const issued = await issueApiKey(accounts, { credits: 1e9, rateLimit: 1e9, concurrency: 1e9 });
  // Creates rotate over many clients' keys: one key with thousands of unfinished tasks is not a
  // real workload (its concurrency limit would refuse them long before).
  const clientKeys: string[] = [];
  for (let i = 0; i < 200; i++) clientKeys.push((await issueApiKey(accounts, { credits: 1e9, rateLimit: 1e9, concurrency: 1e9 })).apiKey);
  return { apiKey: issued.apiKey, clientKeys };
}

/** The bodies of the two measured requests; creates one task so that queries find one. */
export async function httpRequests(base: string, apiKey: string): Promise<{ createBody: string; queryBody: string }> {
  const headers = { 'content-type': 'application/json', 'api-key': apiKey };
  const voices = (await (await fetch(`${base}/audio/api/v1/api-keys/tts/voices?language=en`, { headers })).json()) as any;
  if (!voices.data?.records?.length) throw new Error(`no voices from ${base}: ${JSON.stringify(voices)}`);
  const createBody = JSON.stringify({ voice_id: voices.data.records[0].id, emotion: 0, speed: 1, language: 'en', text: 'Benchmark sentence.' });
  const created = (await (await fetch(`${base}/audio/api/v1/api-keys/tts/task/create`, { method: 'POST', headers, body: createBody })).json()) as any;
  return { createBody, queryBody: JSON.stringify({ global_id: created.data.job_id }) };
}

export async function benchHttp(): Promise<string> {
  const { dataDir, apiKey, clientKeys } = await prepareHttpData();
  const bare = startNode(['bench/bare-server.ts'], { PORT: '18081' });
  // BENCH_SOUNDRY_MAIN: another checkout's entry point (a before/after in one session); BENCH_LOG_LEVEL: info is the default deployment's.
  const soundry = startNode([process.env.BENCH_SOUNDRY_MAIN ?? 'src/main.ts'], { ROLE: 'api', DATA_DIR: dataDir, PORT: '18082', LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn' });
  try {
    await waitHttp('http://127.0.0.1:18081/');
    await waitHttp('http://127.0.0.1:18082/healthz');
    const headers = { 'content-type': 'application/json', 'api-key': apiKey };
    const { createBody: body, queryBody: query } = await httpRequests('http://127.0.0.1:18082', apiKey);

    const rows: Row[] = [];
    rows.push(await load('bare Fastify POST (baseline)', { url: 'http://127.0.0.1:18081/echo', method: 'POST', headers, body: query }));
    rows.push(await load('tts/task/get (auth + rate limit + SELECT)', { url: 'http://127.0.0.1:18082/audio/api/v1/api-keys/tts/task/get', method: 'POST', headers, body: query }));
    let next = 0;
    rows.push(
      await load('tts/task/create (auth + validation + INSERT task and job), 200 keys', {
        url: 'http://127.0.0.1:18082/audio/api/v1/api-keys/tts/task/create',
        requests: [
          {
            method: 'POST',
            body,
            setupRequest: (req) => ({ ...req, headers: { ...headers, 'api-key': clientKeys[next++ % clientKeys.length]! } }),
          },
        ],
      }),
    );
    // The issue's latency goal is p99 at half the bare route's rate: the same two loads, capped there.
    const half = Math.max(1, Math.round(rows[0]!.rps / 2));
    rows.push(await load(`tts/task/get at half the bare rate (${half}/s)`, { url: 'http://127.0.0.1:18082/audio/api/v1/api-keys/tts/task/get', method: 'POST', headers, body: query, overallRate: half }));
    rows.push(
      await load(`tts/task/create at half the bare rate (${half}/s), 200 keys`, {
        url: 'http://127.0.0.1:18082/audio/api/v1/api-keys/tts/task/create',
        overallRate: half,
        requests: [{ method: 'POST', body, setupRequest: (req) => ({ ...req, headers: { ...headers, 'api-key': clientKeys[next++ % clientKeys.length]! } }) }],
      }),
    );
    const base = rows[0]!;
    const lines = [
      `# HTTP throughput and latency`,
      ``,
      `Machine: ${machine()}. ${CONNECTIONS} connections, ${SECONDS} s per row, autocannon in the bench process, each server in its own process (ROLE=api for Soundry, embedded SQLite in WAL mode). Command: \`npm run bench -- http\`${process.env.BENCH_SOUNDRY_MAIN ? ` with BENCH_SOUNDRY_MAIN=${process.env.BENCH_SOUNDRY_MAIN}` : ''}, Soundry at LOG_LEVEL=${process.env.BENCH_LOG_LEVEL ?? 'warn'}. Measured ${new Date().toISOString()}.`,
      ``,
      `| route | req/s | ratio to bare | p99 ms | p99 ratio | errors / non-2xx |`,
      `|---|---|---|---|---|---|`,
      ...rows.map((r) => `| ${r.name} | ${r.rps.toFixed(0)} | ${(r.rps / base.rps).toFixed(2)} | ${r.p99} | ${base.p99 > 0 ? (r.p99 / base.p99).toFixed(1) : 'n/a (baseline < 1 ms)'} | ${r.errors} / ${r.non2xx} |`),
      ``,
    ];
    return writeResult('http', lines.join('\n'));
  } finally {
    bare.kill('SIGTERM');
    soundry.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    await rm(dataDir, { recursive: true, force: true });
  }
}
