/**
 * One Soundry server at a time (argv[2]: its src/main.ts, e.g. an older tree from `git archive <rev> src public
 * package.json` with a node_modules link), ROLE from the environment (default api), on a database made by that
 * version's own code (one query key, 200 client keys): three rounds of a 5 s poll load and a 5 s create load,
 * 10 connections, req/s and the server's CPU per request (all threads / event loop). Run the versions one after
 * the other, alternating, on an idle machine:
 *   for m in /tmp/before/src/main.ts src/main.ts /tmp/before/src/main.ts src/main.ts; do nice -n -15 node --import tsx bench/http-one.ts $m; done
 * Written when bench/http-ab.ts read its third server (slot "after") 25-30% slower than its second with the same
 * code in both, for some minutes (bench/results/http.md D): here each server runs alone, in the same slot.
 * Each round first loads the bare route (bench/bare-server.ts, started once, stopped while Soundry is loaded) for
 * the ratios: the machine's speed drifts by 10-20% over minutes, so a ratio uses its own round's bare rate.
 */
import autocannon from 'autocannon';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { startNode, waitHttp } from './lib.js';
import { httpRequests } from './http.js';
const main = resolve(process.argv[2]!);
const src = dirname(main);
const imp = async (p: string): Promise<any> => import(pathToFileURL(join(src, p)).href);
const { openSqlite } = await imp('adapters/sqlite/database.ts');
const { SqlAccountStore } = await imp('adapters/sql/account-store.ts');
const { issueApiKey } = await imp('services/auth.ts');
const dataDir = mkdtempSync(join(tmpdir(), 'sd-scratch-'));
const db = await openSqlite(join(dataDir, 'soundry.db'));
const accounts = new SqlAccountStore(db);
const apiKey = (await issueApiKey(accounts, { credits: 1e9, rateLimit: 1e9, concurrency: 1e9 })).apiKey as string;
const clientKeys: string[] = [];
for (let i = 0; i < 200; i++) clientKeys.push((await issueApiKey(accounts, { credits: 1e9, rateLimit: 1e9, concurrency: 1e9 })).apiKey);
await db.destroy();
const port = 18231;
const bare = startNode(['bench/bare-server.ts'], { PORT: String(port + 1) });
const child = startNode([main], { ROLE: process.env.ROLE ?? 'api', DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: 'info' });
const cpu = () => { let loop = 0, all = 0; for (const t of readdirSync(`/proc/${child.pid}/task`)) { const f = readFileSync(`/proc/${child.pid}/task/${t}/stat`, 'utf8'); const rest = f.slice(f.lastIndexOf(')') + 2).split(' '); const v = Number(rest[11]) + Number(rest[12]); all += v; if (t === String(child.pid)) loop += v; } return { loop, all }; };
const base = `http://127.0.0.1:${port}`;
try {
  await waitHttp(`${base}/healthz`);
  const { queryBody, createBody } = await httpRequests(base, apiKey);
  const headers = { 'content-type': 'application/json', 'api-key': apiKey };
  await waitHttp(`http://127.0.0.1:${port + 1}/`);
  for (let round = 0; round < 3; round++) {
    child.kill('SIGSTOP');
    const bareRun = await autocannon({ url: `http://127.0.0.1:${port + 1}/echo`, method: 'POST', headers, body: queryBody, connections: 10, duration: 5 });
    child.kill('SIGCONT');
    bare.kill('SIGSTOP');
    const bareRps = bareRun.requests.average;
    let a = cpu();
    const g = await autocannon({ url: `${base}/audio/api/v1/api-keys/tts/task/get`, method: 'POST', headers, body: queryBody, connections: 10, duration: 5 });
    let b = cpu();
    const gl = ((b.loop - a.loop) * 1e4) / g.requests.total, ga = ((b.all - a.all) * 1e4) / g.requests.total;
    let next = 0;
    a = cpu();
    const c = await autocannon({ url: `${base}/audio/api/v1/api-keys/tts/task/create`, connections: 10, duration: 5, requests: [{ method: 'POST', body: createBody, setupRequest: (req: any) => ({ ...req, headers: { ...headers, 'api-key': clientKeys[next++ % clientKeys.length]! } }) }] });
    b = cpu();
    const cl = ((b.loop - a.loop) * 1e4) / c.requests.total, ca = ((b.all - a.all) * 1e4) / c.requests.total;
    bare.kill('SIGCONT');
    const ratio = (rps: number) => (rps / bareRps).toFixed(2);
    console.log(`${process.argv[2]} round ${round + 1}: bare ${bareRps.toFixed(0)} req/s; get ${g.requests.average.toFixed(0)} req/s ${ratio(g.requests.average)}x p99 ${g.latency.p99} ms ${ga.toFixed(0)}/${gl.toFixed(0)} us; create ${c.requests.average.toFixed(0)} req/s ${ratio(c.requests.average)}x p99 ${c.latency.p99} ms ${ca.toFixed(0)}/${cl.toFixed(0)} us (all/loop CPU per req); non2xx ${g.non2xx + c.non2xx}`);
  }
} finally {
  child.kill('SIGKILL');
  bare.kill('SIGCONT');
  bare.kill('SIGKILL');
}
