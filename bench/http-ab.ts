/**
 * Before/after of the hot path in one run: the bare Fastify route, an older Soundry (BENCH_BEFORE_MAIN: its
 * src/main.ts, e.g. from `git archive <rev> src public | tar -x -C /tmp/before` plus its package.json) and this
 * one, each in its own process (ROLE=api, embedded SQLite, copies of one prepared database), loaded in turn,
 * round after round, so that a load swing on a shared machine hits all three alike. Per load: req/s, p99, and
 * the server's CPU per request from /proc (steadier than req/s when other work competes for the cores); then
 * p99 with the load capped at half the bare route's rate (the latency goal).
 *   BENCH_BEFORE_MAIN=/tmp/before/src/main.ts BENCH_ROUNDS=3 node --import tsx bench/http-ab.ts
 * Prints a markdown table; nothing is written to bench/results (the figures go there by hand, with context).
 */
import autocannon from 'autocannon';
import { cp, rm } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import type { ChildProcess } from 'node:child_process';
import { httpRequests, prepareHttpData } from './http.js';
import { machine, startNode, waitHttp } from './lib.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = 10;

function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

interface Server {
  name: string;
  child: ChildProcess;
  base: string;
}

interface Measured {
  rps: number;
  p99: number;
  cpuUs: number;
  errors: number;
}

async function measure(server: Server, opts: autocannon.Options): Promise<Measured> {
  const before = cpuSeconds(server.child.pid!);
  const r = await autocannon({ duration: SECONDS, connections: CONNECTIONS, ...opts });
  const cpu = cpuSeconds(server.child.pid!) - before;
  return { rps: r.requests.average, p99: r.latency.p99, cpuUs: (cpu * 1e6) / Math.max(1, r.requests.total), errors: r.errors + r.non2xx };
}

const { dataDir, apiKey, clientKeys } = await prepareHttpData();
await cp(dataDir, `${dataDir}-before`, { recursive: true });
const servers: Server[] = [{ name: 'bare', child: startNode(['bench/bare-server.ts'], { PORT: '18091' }), base: 'http://127.0.0.1:18091' }];
if (process.env.BENCH_BEFORE_MAIN) {
  servers.push({ name: 'before', child: startNode([process.env.BENCH_BEFORE_MAIN], { ROLE: 'api', DATA_DIR: `${dataDir}-before`, PORT: '18092', LOG_LEVEL: 'warn' }), base: 'http://127.0.0.1:18092' });
}
servers.push({ name: 'after', child: startNode(['src/main.ts'], { ROLE: 'api', DATA_DIR: dataDir, PORT: '18093', LOG_LEVEL: 'warn' }), base: 'http://127.0.0.1:18093' });
const rows: string[] = [];
try {
  await waitHttp(`${servers[0]!.base}/`);
  for (const s of servers.slice(1)) await waitHttp(`${s.base}/healthz`);
  const headers = { 'content-type': 'application/json', 'api-key': apiKey };
  const bodies = new Map<string, { createBody: string; queryBody: string }>();
  for (const s of servers.slice(1)) bodies.set(s.name, await httpRequests(s.base, apiKey));
  const anyBodies = [...bodies.values()][0]!;
  let next = 0;
  const createOpts = (s: Server, body: string): autocannon.Options => ({
    url: `${s.base}/audio/api/v1/api-keys/tts/task/create`,
    requests: [{ method: 'POST', body, setupRequest: (req) => ({ ...req, headers: { ...headers, 'api-key': clientKeys[next++ % clientKeys.length]! } }) }],
  });
  for (let round = 1; round <= ROUNDS; round++) {
    const load = process.env.BENCH_LOADAVG !== '0' ? readFileSync('/proc/loadavg', 'utf8').split(' ')[0] : '';
    const bare = await measure(servers[0]!, { url: `${servers[0]!.base}/echo`, method: 'POST', headers, body: anyBodies.queryBody });
    const half = Math.max(1, Math.round(bare.rps / 2));
    rows.push(`| ${round} | bare | ${bare.rps.toFixed(0)} | 1.00 | ${bare.p99} | ${bare.cpuUs.toFixed(0)} | | | | | | | ${load} |`);
    for (const s of servers.slice(1)) {
      const { createBody, queryBody } = bodies.get(s.name)!;
      const get = await measure(s, { url: `${s.base}/audio/api/v1/api-keys/tts/task/get`, method: 'POST', headers, body: queryBody });
      const create = await measure(s, createOpts(s, createBody));
      const getHalf = await measure(s, { url: `${s.base}/audio/api/v1/api-keys/tts/task/get`, method: 'POST', headers, body: queryBody, overallRate: half });
      const createHalf = await measure(s, { ...createOpts(s, createBody), overallRate: half });
      rows.push(
        `| ${round} | ${s.name} | ${get.rps.toFixed(0)} | ${(get.rps / bare.rps).toFixed(2)} | ${get.p99} | ${get.cpuUs.toFixed(0)} | ${create.rps.toFixed(0)} | ${(create.rps / bare.rps).toFixed(2)} | ${create.p99} | ${create.cpuUs.toFixed(0)} | ${getHalf.p99} (${getHalf.rps.toFixed(0)}/s) | ${createHalf.p99} (${createHalf.rps.toFixed(0)}/s) | ${load} |` +
          (get.errors + create.errors ? ` errors ${get.errors + create.errors}` : ''),
      );
      console.error(rows.at(-1));
    }
  }
  console.log(`Machine: ${machine()}. ${CONNECTIONS} connections, ${SECONDS} s per load. Measured ${new Date().toISOString()}.\n`);
  console.log('| round | server | get req/s | get ratio | get p99 ms | get CPU us/req | create req/s | create ratio | create p99 ms | create CPU us/req | get p99 at half bare rate | create p99 at half bare rate | load avg |');
  console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const r of rows) console.log(r);
} finally {
  for (const s of servers) s.child.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 1000));
  await rm(dataDir, { recursive: true, force: true });
  await rm(`${dataDir}-before`, { recursive: true, force: true });
}
