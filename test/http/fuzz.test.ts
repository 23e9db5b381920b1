import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { API, FUZZ_UPLOAD_MAX_BYTES, ROUTES } from '../helpers/fuzz-cases.js';
import { describeTally, runFuzz } from '../helpers/fuzz-run.js';

/**
 * Fuzz: thousands of malformed requests over every route, through an ordinary client (fetch) and as raw
 * bytes over TCP (what no client library would send). Every answer must be an envelope (except the
 * documented non-envelope answers: downloads, /metrics, /healthz, /readyz, /docs, /openapi.json, voice
 * assets), none may be a 5xx, the server must be alive at the end, and its memory must stay bounded.
 *
 * Seeded: the same seed sends the same requests. SOUNDRY_FUZZ_SEED=<n> (or `random`) and
 * SOUNDRY_FUZZ_RUNS=<n> explore further; every failure prints the seed and the request that caused it.
 * Traffic goes only to this test's own server on 127.0.0.1, a fixed number of requests, within a time bound.
 * scripts/fuzz-remote.ts sends the same requests to a Soundry that is already running (npm start), from outside.
 */
const SEED = process.env.SOUNDRY_FUZZ_SEED === 'random' ? Date.now() % 2 ** 31 : Number(process.env.SOUNDRY_FUZZ_SEED ?? 20261123);
const RUNS = Number(process.env.SOUNDRY_FUZZ_RUNS ?? 4000);
/**
 * Requests stop being sent after this long. The count, not the clock, is what the test promises: on a quiet
 * 2-core machine 4,000 take ~30 s, but a loaded one (CI next to other jobs) sent only 301 in 35 s, so the
 * bound is far, and the test's own timeout beyond it.
 */
const TIME_BOUND_MS = Number(process.env.SOUNDRY_FUZZ_TIME_MS ?? 240_000);
const CONCURRENCY = 8;

/** `METHOD url` pairs from Fastify's printRoutes({ commonPrefix: false }) tree. */
function printedRoutes(tree: string): string[] {
  const stack: string[] = [];
  const out: string[] = [];
  for (const line of tree.split('\n')) {
    const m = /^((?:│ {3}| {4})*)(?:├── |└── )(.+?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!m) continue;
    const depth = m[1]!.length / 4;
    stack.length = depth;
    stack.push(m[2]!);
    for (const method of m[3]?.split(', ') ?? []) out.push(`${method} ${stack.join('')}`);
  }
  return out.sort();
}

/** The GC, so heap measurements count live objects only. */
function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  gc();
  gc();
}

const mb = (bytes: number) => Math.round(bytes / 1024 / 1024);

let app: TestApp;
let validKey: string;
beforeAll(async () => {
  // Workers on (so /healthz can answer 200); the key has no credits, so no fuzzed create ever becomes a task.
  app = await startTestApp({ UPLOAD_MAX_BYTES: String(FUZZ_UPLOAD_MAX_BYTES) });
  ({ key: validKey } = await app.newKey({ credits: 0, rateLimit: 1_000_000, concurrency: 1000 }));
});
afterAll(async () => app?.close());

describe('fuzz: malformed requests over every route', () => {
  it('the route table covers every route of the app', async () => {
    for (const r of ROUTES) for (const method of r.methods) expect(app.http.hasRoute({ method: method as 'GET', url: r.url }), `${method} ${r.url}`).toBe(true);
    const printed = printedRoutes(app.http.printRoutes({ commonPrefix: false }));
    const table = ROUTES.flatMap((r) => r.methods.map((m) => `${m} ${r.url}`)).sort();
    // printRoutes names wildcard routes by their last segment ("*"): compare those by count, the rest by name.
    expect(printed.filter((p) => !p.endsWith('*'))).toEqual(table.filter((p) => !p.endsWith('*')));
    expect(printed.length, app.http.printRoutes({ commonPrefix: false })).toBe(table.length);
  });

  it(`answers ${RUNS} malformed requests with envelopes, no 5xx, stays up with bounded memory (seed ${SEED})`, async () => {
    console.log(`fuzz seed ${SEED} (SOUNDRY_FUZZ_SEED=${SEED} reproduces this run), ${RUNS} requests`);
    // RSS/heap (MB) after a full GC every 1000 requests. Without the GC the heap grows until V8 decides on a
    // major collection (RSS climbed ~35 MB per 1000 requests here, all of it garbage): live memory is what is bounded.
    const samples: string[] = [];
    let rssBefore = 0;
    let heapBefore = 0;
    const WARMUP = Math.min(300, Math.floor(RUNS / 10));
    const tally = await runFuzz(
      { baseUrl: app.baseUrl, validKey },
      {
        seed: SEED,
        runs: RUNS,
        timeBoundMs: TIME_BOUND_MS,
        concurrency: CONCURRENCY,
        before: (i) => {
          if (i !== WARMUP) return;
          collectGarbage();
          rssBefore = process.memoryUsage().rss;
          heapBefore = process.memoryUsage().heapUsed;
        },
        after: (i) => {
          if ((i + 1) % 1000 !== 0) return;
          collectGarbage();
          samples.push(`${mb(process.memoryUsage().rss)}/${mb(process.memoryUsage().heapUsed)}`);
        },
      },
    );
    const sent = tally.fetch + tally.raw;

    // Still alive and serving.
    const health = await fetch(`${app.baseUrl}/healthz`);
    const voices = await app.get(`${API}/tts/voices?page_size=1`, validKey);
    collectGarbage();
    const rssAfter = process.memoryUsage().rss;
    const heapAfter = process.memoryUsage().heapUsed;
    console.log(
      `fuzz: ${describeTally(tally)}; after GC: RSS ${mb(rssBefore)} MB after ${WARMUP} requests -> ${mb(rssAfter)} MB at the end, ` +
        `heap ${mb(heapBefore)} -> ${mb(heapAfter)} MB (RSS/heap every 1000: ${samples.join(', ')})`,
    );
    expect(tally.failures, `seed ${SEED}: ${tally.failed} bad answers, the first ${tally.failures.length}:\n${tally.failures.join('\n')}`).toEqual([]);
    expect(health.status).toBe(200);
    expect(voices.json.code).toBe(100000);
    expect(sent).toBeGreaterThanOrEqual(Math.min(RUNS, 1000));
    // The generators make requests fetch will send: its refusals are a small share, not what was tested.
    expect(tally.unsent).toBeLessThan(sent * 0.05);
    // The test process is client and server: bounds are generous, a leak per request would still break them.
    expect(heapAfter - heapBefore, 'heap growth after GC').toBeLessThan(40 * 1024 * 1024);
    expect(rssAfter - rssBefore, 'RSS growth').toBeLessThan(256 * 1024 * 1024);
  }, TIME_BOUND_MS + 60_000);
});
