/**
 * Creates held up for half a minute: one Soundry server (argv[2]: its src/main.ts, e.g. an older tree from `git
 * archive <rev> src public package.json` with a node_modules link; ROLE=api, embedded SQLite), six 5 s windows of
 * the bench's create load (10 connections, 200 client keys) back to back, each window's creates/s, p99, the
 * server's CPU per create (all threads) and the size of the database's WAL file after it. Written when the WAL
 * was found to grow by every commit under a steady load and never start again (bench/results/http.md I): short
 * runs such as bench/http-one.ts saw little of it. Run versions one after the other on an idle machine:
 *   for m in /tmp/before/src/main.ts src/main.ts; do nice -n -15 node --import tsx bench/http-sustained.ts $m; done
 */
import autocannon from 'autocannon';
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { httpRequests, prepareHttpData } from './http.js';
import { machine, processCpuSeconds, startNode, waitHttp } from './lib.js';

const { dataDir, apiKey, clientKeys } = await prepareHttpData();
const port = 18294;
const child = startNode([resolve(process.argv[2]!)], { ROLE: 'api', DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: 'info' });
const base = `http://127.0.0.1:${port}`;
const walMb = () => {
  try {
    return (statSync(`${dataDir}/soundry.db-wal`).size / 1e6).toFixed(0);
  } catch {
    return '0';
  }
};
try {
  await waitHttp(`${base}/healthz`);
  const { createBody } = await httpRequests(base, apiKey);
  const headers = { 'content-type': 'application/json', 'api-key': apiKey };
  let next = 0;
  const windows: string[] = [];
  for (let i = 0; i < 6; i++) {
    const cpu = processCpuSeconds(child.pid!);
    const c = await autocannon({
      url: `${base}/audio/api/v1/api-keys/tts/task/create`,
      connections: 10,
      duration: 5,
      requests: [{ method: 'POST', body: createBody, setupRequest: (req: any) => ({ ...req, headers: { ...headers, 'api-key': clientKeys[next++ % clientKeys.length]! } }) }],
    });
    const us = ((processCpuSeconds(child.pid!) - cpu) * 1e6) / c.requests.total;
    windows.push(`${c.requests.average.toFixed(0)}/s p99 ${c.latency.p99} ms ${us.toFixed(0)} us, WAL ${walMb()} MB${c.non2xx ? ` (${c.non2xx} non-2xx)` : ''}`);
  }
  console.log(`${machine()}\n${process.argv[2]}: ${windows.join(' | ')}`);
} finally {
  child.kill('SIGKILL');
}
