/**
 * Polls of a finished TTS task (what a client does once its task is done: every answer carries a result link),
 * before/after, the API alone (ROLE=api, so that no worker backlog shares the cores). One database whose task a
 * ROLE=all server of this checkout has finished; each version then runs on a copy of it, alternating, one server at a
 * time: 10 connections, BENCH_SECONDS (5) per load, server CPU per request from /proc.
 *   BENCH_BEFORE_MAIN=/tmp/before/src/main.ts BENCH_ROUNDS=3 nice -n -15 node --import tsx bench/poll-finished-ab.ts
 * Prints a markdown table; the figures go to bench/results/http.md by hand, with context.
 */
import autocannon from 'autocannon';
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { httpRequests, prepareHttpData } from './http.js';
import { machine, mainThreadCpuSeconds, processCpuSeconds, startNode, waitHttp } from './lib.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const before = process.env.BENCH_BEFORE_MAIN;
if (!before) throw new Error('BENCH_BEFORE_MAIN: the older checkout\'s src/main.ts');
const port = 18095;
const base = `http://127.0.0.1:${port}`;

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

const { dataDir, apiKey } = await prepareHttpData();
const headers = { 'content-type': 'application/json', 'api-key': apiKey };
// The task to poll, finished by this checkout's workers.
const maker = startNode(['src/main.ts'], { ROLE: 'all', DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: 'warn' });
let queryBody: string;
try {
  await waitHttp(`${base}/healthz`);
  ({ queryBody } = await httpRequests(base, apiKey));
  for (;;) {
    const polled = (await (await fetch(`${base}/audio/api/v1/api-keys/tts/task/get`, { method: 'POST', headers, body: queryBody })).json()) as any;
    if (polled.data?.status === 'success') break;
    if (polled.data?.status === 'failed') throw new Error(`the task failed: ${polled.data.error}`);
    await new Promise((r) => setTimeout(r, 200));
  }
} finally {
  await stop(maker);
}

const rows: string[] = [];
for (let round = 1; round <= ROUNDS; round++) {
  for (const [name, main] of [['before', resolve(before)], ['after', resolve('src/main.ts')]] as const) {
    const copy = await mkdtemp(join(tmpdir(), 'soundry-pollfin-'));
    await cp(dataDir, copy, { recursive: true });
    const server = startNode([main], { ROLE: 'api', DATA_DIR: copy, PORT: String(port), LOG_LEVEL: 'info' }, `${dirname(dirname(main))}/`);
    try {
      await waitHttp(`${base}/healthz`);
      const opts = { url: `${base}/audio/api/v1/api-keys/tts/task/get`, connections: 10, method: 'POST' as const, headers, body: queryBody };
      await autocannon({ ...opts, duration: 1 });
      const cpu0 = processCpuSeconds(server.pid!);
      const loop0 = mainThreadCpuSeconds(server.pid!);
      const r = await autocannon({ ...opts, duration: SECONDS });
      const per = (s: number) => Math.round((s * 1e6) / r.requests.total);
      rows.push(`| ${round} | ${name} | ${Math.round(r.requests.average)} | ${r.latency.p99} | ${per(processCpuSeconds(server.pid!) - cpu0)} | ${per(mainThreadCpuSeconds(server.pid!) - loop0)} | ${r.non2xx} |`);
    } finally {
      await stop(server);
      await rm(copy, { recursive: true, force: true });
    }
  }
}
await rm(dataDir, { recursive: true, force: true });
console.log(`Machine: ${machine()}. ROLE=api, LOG_LEVEL=info, a finished TTS task polled, 10 connections, ${SECONDS} s per load. Measured ${new Date().toISOString()}.\n`);
console.log('| round | server | poll req/s | p99 ms | CPU us/req | loop CPU us/req | non-2xx |\n|---|---|---|---|---|---|---|');
console.log(rows.join('\n'));
