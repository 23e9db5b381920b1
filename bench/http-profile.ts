/**
 * Where an API process spends its CPU under the bench's create or query load: starts Soundry
 * (ROLE=api, embedded SQLite) under `node --cpu-prof`, drives one load, stops it, and prints the
 * top self-time entries. `node --import tsx bench/http-profile.ts get|create [seconds]`; PROFILE_MAIN
 * names another entry point (an older checkout's src/main.ts, for a before/after), PROFILE_ROLE another
 * role (`all`: as `npm start` runs, the workers on the same event loop).
 */
import autocannon from 'autocannon';
import { readdir, readFile, rm, mkdtemp } from 'node:fs/promises';
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { httpRequests, prepareHttpData } from './http.js';
import { processCpuSeconds, root, waitHttp } from './lib.js';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface CpuProfile {
  startTime: number;
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/**
 * Self time per function (summed over the nodes that are the same function at different stacks),
 * counting only samples inside [fromUs, toUs]: start-up (module loading, tsx) is not the hot path.
 * V8's sample times and process.hrtime share the monotonic clock on Linux.
 */
export function topSelf(profile: CpuProfile, n: number, fromUs: number, toUs: number): { busyUs: number; top: Array<{ share: number; name: string }> } {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map<string, number>();
  let total = 0;
  let at = profile.startTime;
  profile.samples.forEach((id, i) => {
    at += profile.timeDeltas[i] ?? 0;
    if (at < fromUs || at > toUs) return;
    const f = byId.get(id)!.callFrame;
    const where = f.url ? `${relative(root, f.url.replace(/^file:\/\//, '')).replace(/^node_modules\//, '')}:${f.lineNumber + 1}` : '';
    const name = `${f.functionName || '(anonymous)'}${where ? ` ${where}` : ''}`;
    const dt = profile.timeDeltas[i] ?? 0;
    self.set(name, (self.get(name) ?? 0) + dt);
    total += dt;
  });
  const top = [...self.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([name, t]) => ({ share: t / total, name }));
  return { busyUs: total - (self.get('(idle)') ?? 0), top };
}

const which = process.argv[2] === 'create' ? 'create' : 'get';
const seconds = Number(process.argv[3] ?? 10);
const { dataDir, apiKey, clientKeys } = await prepareHttpData();
const profDir = await mkdtemp(join(tmpdir(), 'soundry-prof-'));
const port = '18083';
const server = spawn(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${profDir}`, '--import', 'tsx', process.env.PROFILE_MAIN ?? 'src/main.ts'], {
  cwd: root,
  env: { ...process.env, ROLE: process.env.PROFILE_ROLE ?? 'api', DATA_DIR: dataDir, PORT: port, LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn' },
  stdio: ['ignore', 'ignore', 'inherit'],
});
const windowUs = [0, Infinity];
let requests = 0;
let cpuUsed = 0;
try {
  const base = `http://127.0.0.1:${port}`;
  await waitHttp(`${base}/healthz`);
  const { createBody, queryBody } = await httpRequests(base, apiKey);
  const headers = { 'content-type': 'application/json', 'api-key': apiKey };
  let next = 0;
  windowUs[0] = Number(process.hrtime.bigint() / 1000n);
  const cpuBefore = processCpuSeconds(server.pid!);
  const r = await autocannon(
    which === 'get'
      ? { url: `${base}/audio/api/v1/api-keys/tts/task/get`, duration: seconds, connections: 10, method: 'POST', headers, body: queryBody }
      : {
          url: `${base}/audio/api/v1/api-keys/tts/task/create`,
          duration: seconds,
          connections: 10,
          requests: [{ method: 'POST', body: createBody, setupRequest: (req) => ({ ...req, headers: { ...headers, 'api-key': clientKeys[next++ % clientKeys.length]! } }) }],
        },
  );
  windowUs[1] = Number(process.hrtime.bigint() / 1000n);
  requests = r.requests.total;
  cpuUsed = processCpuSeconds(server.pid!) - cpuBefore;
  console.log(`${which}: ${r.requests.average.toFixed(0)} req/s, p99 ${r.latency.p99} ms, non-2xx ${r.non2xx}, errors ${r.errors}`);
} finally {
  const exited = new Promise((resolve) => server.once('exit', resolve));
  server.kill('SIGTERM');
  await exited;
}
const file = (await readdir(profDir)).find((f) => f.endsWith('.cpuprofile'));
if (!file) throw new Error(`no profile written in ${profDir}`);
const { busyUs, top } = topSelf(JSON.parse(await readFile(join(profDir, file), 'utf8')) as CpuProfile, Number(process.env.PROFILE_TOP ?? 25), windowUs[0]!, windowUs[1]!);
// CPU per request, not req/s, is what compares across runs on a shared machine: other load slows the
// clock-time figures but barely changes the work one request costs.
console.log(`API process CPU: ${cpuUsed.toFixed(2)} s for ${requests} requests = ${((cpuUsed * 1e6) / Math.max(1, requests)).toFixed(0)} us per request (/proc); non-idle samples ${(busyUs / 1e6).toFixed(2)} s`);
for (const t of top) console.log(`${(t.share * 100).toFixed(1).padStart(5)}%  ${t.name}`);
await rm(dataDir, { recursive: true, force: true });
console.log(`profile: ${join(profDir, file)} window ${windowUs[0]} ${windowUs[1]}`);
