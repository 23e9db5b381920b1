import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Redis } from 'ioredis';
import type { Kysely } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { openPostgres } from '../../src/adapters/postgres/database.js';
import type { Database } from '../../src/adapters/sql/schema.js';
import { encodeWav } from '../../src/media/wav.js';
import { freePort } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';
import { TEST_REDIS_URL } from '../helpers/redis-test-prefix.js';
import { startS3, type TestS3 } from '../helpers/s3.js';

/**
 * The scale-out acceptance test, with real processes: one API node (ROLE=api) and two worker nodes
 * (ROLE=worker), each `node --import tsx src/main.ts`, on one PostgreSQL database, one Redis (BullMQ
 * queues and shared limits under prefixes of this run's own) and one S3 bucket (s3rver). Every
 * capability goes through the API node's public HTTP API only; a worker is killed with SIGKILL while
 * it verifiably holds a task. Every task must end in success exactly once, be charged exactly once,
 * and every result must download from the URL the API hands out.
 */

const API = '/audio/api/v1/api-keys';
const root = new URL('../..', import.meta.url).pathname;
const run = randomBytes(5).toString('hex');
const QUEUE_PREFIX = `soundry-mp-${run}`;
const REDIS_KEY_PREFIX = `soundry-mp-${run}:`;
const SIGNING_SECRET = `scaleout-processes-${randomBytes(12).toString('hex')}`;
const INITIAL_CREDITS = 1000;

interface LogLine {
  level: number;
  msg: string;
  taskId?: string;
  kind?: string;
  attempt?: number;
  [k: string]: unknown;
}

/** One child process of Soundry, with what it wrote (pino JSON lines on stdout). */
interface Node {
  name: string;
  child: ChildProcess;
  base: string;
  logs: LogLine[];
  stderr: string[];
  /** Resolves once everything the process wrote on stdout has been read (it outlives 'exit'). */
  drained: Promise<void>;
}

const nodes: Node[] = [];
const tempDirs: string[] = [];
let pg: TestDatabase | undefined;
let s3: TestS3 | undefined;
let db: Kysely<Database> | undefined;

const t0 = Date.now();
const elapsed = () => `${((Date.now() - t0) / 1000).toFixed(1)}s`;
const gone = (c: ChildProcess) => c.exitCode !== null || c.signalCode !== null;
// A process killed by a signal has exitCode null and signalCode set: both mean it is gone.
const exited = (c: ChildProcess) => new Promise<void>((r) => (gone(c) ? r() : c.once('exit', () => r())));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, fn: () => Promise<T | undefined | null | false> | T | undefined | null | false, timeoutMs: number, everyMs = 200): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastErr: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      lastErr = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastErr ? ` (last error: ${String(lastErr)})` : ''}`);
    await sleep(everyMs);
  }
}

function spawnNode(name: string, env: Record<string, string>, port: number): Node {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: root,
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines = createInterface({ input: child.stdout! });
  const drained = new Promise<void>((r) => lines.once('close', () => r()));
  const node: Node = { name, child, base: `http://127.0.0.1:${port}`, logs: [], stderr: [], drained };
  lines.on('line', (line) => {
    try {
      node.logs.push(JSON.parse(line) as LogLine);
    } catch {
      node.logs.push({ level: 30, msg: line });
    }
  });
  createInterface({ input: child.stderr! }).on('line', (line) => node.stderr.push(line));
  nodes.push(node);
  return node;
}

/** The admin CLI against the same database, as an operator would run it. */
async function cli(args: string[], env: Record<string, string>): Promise<any> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += String(d)));
  child.stderr.on('data', (d) => (err += String(d)));
  const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
  if (code !== 0) throw new Error(`cli ${args.join(' ')} exited ${code}: ${err}`);
  return JSON.parse(out.trim().split('\n').pop()!);
}

const started = (n: Node, taskId: string) => n.logs.filter((l) => l.msg === 'task started' && l.taskId === taskId);
const succeeded = (n: Node, taskId?: string) => n.logs.filter((l) => l.msg === 'task succeeded' && (taskId === undefined || l.taskId === taskId));

/** A few tens of seconds of stereo tone melody under broadband noise, as a 16-bit WAV. */
function toneAndNoiseWav(seconds: number, rate: number): Buffer {
  const n = seconds * rate;
  const left = new Float32Array(n);
  const right = new Float32Array(n);
  let seed = 12345;
  const noise = () => {
    seed = (seed * 1664525 + 1013904223) >>> 0;
    return seed / 4294967296 - 0.5;
  };
  const notes = [220, 277.18, 329.63, 440, 392, 329.63, 293.66, 246.94];
  for (let i = 0; i < n; i++) {
    const t = i / rate;
    const f = notes[Math.floor(t / 0.75) % notes.length]!;
    const env = 0.6 + 0.4 * Math.sin(2 * Math.PI * 0.5 * t);
    const tone = 0.25 * env * (Math.sin(2 * Math.PI * f * t) + 0.3 * Math.sin(2 * Math.PI * 2 * f * t));
    const hiss = 0.06 * noise();
    left[i] = tone + hiss;
    right[i] = 0.8 * tone + 0.06 * noise();
  }
  return encodeWav({ sampleRate: rate, channels: [left, right] }, 16);
}

const ARTICLE = `Solar power is the conversion of energy from sunlight into electricity. Photovoltaic cells convert light into an electric current using the photovoltaic effect.
Concentrated solar power systems use lenses or mirrors to focus a large area of sunlight into a small beam. The cost of solar electricity has fallen by more than eighty percent in a decade.
Solar panels are now the cheapest source of new electricity in many countries. Storage with batteries lets homes use solar energy after sunset.
Critics point out that solar output varies with weather and season, so grids need flexible backup. Engineers answer with storage, long-distance transmission and demand response.`;

afterAll(async () => {
  for (const n of nodes) if (!gone(n.child)) n.child.kill('SIGKILL');
  await Promise.all(nodes.map((n) => exited(n.child)));
  await db?.destroy().catch(() => {});
  await pg?.drop().catch((err) => console.error('dropping the test database failed', err));
  await s3?.close().catch((err) => console.error('stopping s3rver failed', err));
  const redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: 1 });
  try {
    for (const match of [`${QUEUE_PREFIX}:*`, `${REDIS_KEY_PREFIX}*`]) {
      for await (const keys of redis.scanStream({ match, count: 500 })) if ((keys as string[]).length) await redis.del(...(keys as string[]));
    }
  } finally {
    redis.disconnect();
  }
  for (const d of tempDirs) await rm(d, { recursive: true, force: true });
}, 60_000);

describe('scale-out with real processes: one API node, two worker nodes, Postgres, Redis, S3', () => {
  it('a worker is SIGKILLed while it holds a task: every task succeeds once, is charged once, and every result downloads', async () => {
    const timings: Record<string, string> = {};
    try {
      pg = await createTestDatabase();
      s3 = await startS3();
      const [apiPort, w1Port, w2Port] = [await freePort(), await freePort(), await freePort()];
      const apiBase = `http://127.0.0.1:${apiPort}`;
      const modelsDir = await mkdtemp(join(tmpdir(), 'soundry-mp-models-')); // empty: built-in engines only
      tempDirs.push(modelsDir);
      const shared: Record<string, string> = {
        DATABASE_URL: pg.url,
        SIGNING_SECRET,
        REDIS_URL: TEST_REDIS_URL,
        QUEUE_PREFIX,
        REDIS_KEY_PREFIX,
        ...s3.env,
        // Every node links to files through the API's public address (uploads, results, avatars).
        PUBLIC_BASE_URL: apiBase,
        MODELS_DIR: modelsDir,
        SEPARATION_ENGINE: 'builtin',
        // Built-in engines only: no podcast script task tries to download the local language model.
        LLM_ENGINE: 'builtin',
        LEASE_SECONDS: '5',
        WORKER_THREADS: '1',
        SHUTDOWN_GRACE_SECONDS: '5',
        TTS_MAX_CHARS: '100000',
        LOG_LEVEL: 'info',
      };
      const dataDir = async (name: string) => {
        const d = await mkdtemp(join(tmpdir(), `soundry-mp-${name}-`));
        tempDirs.push(d);
        return d;
      };
      const api = spawnNode('api', { ...shared, ROLE: 'api', DATA_DIR: await dataDir('api') }, apiPort);
      const w1 = spawnNode('worker-1', { ...shared, ROLE: 'worker', DATA_DIR: await dataDir('w1') }, w1Port);
      const w2 = spawnNode('worker-2', { ...shared, ROLE: 'worker', DATA_DIR: await dataDir('w2') }, w2Port);
      const workers = [w1, w2];
      // The key, made by the admin CLI on the same database while the nodes start.
      const issued = await cli(['keys', 'create', '--credits', String(INITIAL_CREDITS), '--rate-limit', '1000', '--concurrency', '50'], {
        DATABASE_URL: pg.url,
        SIGNING_SECRET,
        DATA_DIR: await dataDir('cli'),
      });
      const key: string = issued.api_key;
      const accountId: string = issued.account_id;
      expect(key).toMatch(/^sk_/);

      for (const n of nodes) {
        const health = await until(`${n.name} /healthz`, async () => (gone(n.child) ? 'exited' : (await fetch(`${n.base}/healthz`)).status === 200 && 'ok'), 120_000, 250);
        if (health === 'exited') throw new Error(`${n.name} exited at start-up: ${n.stderr.slice(-20).join('\n')}`);
      }
      timings.healthy = elapsed();
      for (const w of workers) expect((await (await fetch(`${w.base}/healthz`)).json()) as any).toMatchObject({ status: 'ok' });
      db = await openPostgres(pg.url, { poolSize: 2, applicationName: 'soundry-test' });

      // ---- Public API of the API node only from here on. ----
      const post = async (path: string, body: unknown): Promise<any> => {
        const res = await fetch(`${apiBase}${API}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'api-key': key }, body: JSON.stringify(body) });
        expect(res.status, path).toBe(200);
        return res.json();
      };
      const create = async (path: string, body: unknown, idField: 'job_id' | 'global_id'): Promise<string> => {
        const answer = await post(path, body);
        expect(answer.code, `${path}: ${JSON.stringify(answer)}`).toBe(100000);
        return answer.data[idField] as string;
      };

      const wav = toneAndNoiseWav(30, 24_000);
      const form = new FormData();
      form.append('file', new Blob([new Uint8Array(wav)], { type: 'audio/wav' }), 'tone-and-noise.wav');
      const up = (await (await fetch(`${apiBase}${API}/files/upload`, { method: 'POST', headers: { 'api-key': key }, body: form })).json()) as any;
      expect(up.code, JSON.stringify(up)).toBe(100000);
      expect(up.data.size).toBe(wav.length);
      const inputurl: string = up.data.url;
      expect(inputurl.startsWith(`${apiBase}/files/`), inputurl).toBe(true);

      const voices = (await (await fetch(`${apiBase}${API}/tts/voices?language=en`, { headers: { 'api-key': key } })).json()) as any;
      const voiceId: number = voices.data.records[0].id;

      type Kind = 'tts' | 'enhance' | 'separation' | 'podcast_script' | 'podcast_audio';
      const tasks: { id: string; kind: Kind; get: string; idField: 'job_id' | 'global_id' }[] = [];
      // Creates answer job_id (podcast: global_id); TTS and podcast queries take global_id, the others job_id.
      const add = async (kind: Kind, createPath: string, getPath: string, idField: 'job_id' | 'global_id', body: unknown) => {
        const id = await create(createPath, body, kind.startsWith('podcast') ? 'global_id' : 'job_id');
        tasks.push({ id, kind, get: getPath, idField });
        return id;
      };

      // The long one first, so that it is surely running when a worker is killed: many stages over 30 s of stereo.
      const enhanceId = await add('enhance', '/enhance/task/create', '/enhance/task/get', 'job_id', {
        inputurl,
        enhance_type: { remove_noise: true, remove_reverb: true, mouth_sounds: true, fillers: true, hesitations: true, stutters: true, long_silences: true, autoeq: true, normalize: true },
      });
      await add('separation', '/separation/task/create', '/separation/task/get', 'job_id', { inputurl, model_type: 350 });
      const scriptId = await add('podcast_script', '/podcast/script/create', '/podcast/script/get', 'global_id', {
        source_type: 4, text: ARTICLE, speakers: [], style: 1, duration: 1, use_mode: 'ai', commercial_use: 0, language: 'en',
      });
      const tts = (text: string, format?: 'wav') => add('tts', '/tts/task/create', '/tts/task/get', 'global_id', { voice_id: voiceId, emotion: 0, speed: 1, language: 'en', text, ...(format ? { format } : {}) });
      await tts('The quick brown fox jumps over the lazy dog, and keeps on running through the long summer afternoon. '.repeat(25));
      await tts('A short sentence from the first of several speech tasks.');
      await tts('A second short one, rendered as a WAV file.', 'wav');
      await tts('Numbers too: 1, 2, 3, and the year 2024.');
      timings.created = elapsed();

      // ---- Kill the worker that holds the enhancement, while it holds it. ----
      const victim = await until('a worker to start the enhancement', () => workers.find((w) => started(w, enhanceId).length > 0), 60_000, 50);
      const survivor = workers.find((w) => w !== victim)!;
      await sleep(1500); // well into its stages
      const before = await db.selectFrom('tasks').select(['state']).where('id', '=', enhanceId).executeTakeFirstOrThrow();
      expect(before.state).toBe('running');
      victim.child.kill('SIGKILL');
      await exited(victim.child);
      await victim.drained;
      timings.killed = elapsed();
      expect(victim.child.signalCode).toBe('SIGKILL');
      // Right after its death, before its BullMQ lock (5 s) can have expired: the task is still
      // running, held by the dead worker's lock, and the dead worker never recorded it done.
      const lockHolder = await (async () => {
        const redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: 1 });
        try {
          return await redis.get(`${QUEUE_PREFIX}:soundry-enhance:${enhanceId}:lock`);
        } finally {
          redis.disconnect();
        }
      })();
      const atDeath = await db.selectFrom('tasks').select(['state']).where('id', '=', enhanceId).executeTakeFirstOrThrow();
      expect(atDeath.state).toBe('running');
      expect(lockHolder, 'the dead worker still holds the job lock').toBeTruthy();
      expect(started(victim, enhanceId)).toEqual([expect.objectContaining({ attempt: 1, kind: 'enhance' })]);
      expect(succeeded(victim, enhanceId)).toEqual([]);
      // Everything the victim had started and not finished when it died. One it had recorded done
      // and died before logging (a narrow window) is finished, not held: no one runs it again.
      const unlogged = [...new Set(victim.logs.filter((l) => l.msg === 'task started').map((l) => l.taskId!))].filter((id) => succeeded(victim, id).length === 0);
      const rowsAtDeath = await db.selectFrom('tasks').select(['id', 'state']).where('id', 'in', unlogged).execute();
      const heldByVictim = rowsAtDeath.filter((r) => r.state === 'running').map((r) => r.id);
      const doneUnlogged = rowsAtDeath.filter((r) => r.state === 'success').map((r) => r.id);
      expect(heldByVictim).toContain(enhanceId);

      // ---- The podcast's second step, from the script the workers wrote. ----
      const waitDone = async (t: (typeof tasks)[number], timeoutMs: number) =>
        until(`${t.kind} ${t.id} to finish`, async () => {
          const q = await post(t.get, { [t.idField]: t.id });
          expect(q.code, JSON.stringify(q)).toBe(100000);
          return q.data.status === 'waiting' ? null : q;
        }, timeoutMs, 500);
      const script = await waitDone(tasks.find((t) => t.id === scriptId)!, 90_000);
      expect(script.data.status, JSON.stringify(script)).toBe('success');
      await add('podcast_audio', '/podcast/audio/create', '/podcast/audio/get', 'global_id', {
        title: script.data.title,
        processed_content: script.data.processed_content,
        podcast_script: script.data.podcast_script,
        hightlights: script.data.hightlights,
        global_id: script.data.global_id,
      });

      // ---- Every task ends in success, through the query operations. ----
      const answers = new Map<string, any>();
      for (const t of tasks) answers.set(t.id, await waitDone(t, Math.max(15_000, 200_000 - (Date.now() - t0))));
      timings.allDone = elapsed();
      for (const t of tasks) expect(answers.get(t.id).data.status, `${t.kind} ${t.id}: ${JSON.stringify(answers.get(t.id))}`).toBe('success');
      expect(new Set(tasks.map((t) => t.kind))).toEqual(new Set(['tts', 'enhance', 'separation', 'podcast_script', 'podcast_audio']));

      // Success exactly once: one 'task succeeded' per task across every worker, the dead one included.
      for (const t of tasks) expect(workers.flatMap((w) => succeeded(w, t.id)), `${t.kind} ${t.id}`).toHaveLength(doneUnlogged.includes(t.id) ? 0 : 1);
      // What the dead worker held was delivered again to the survivor (a later attempt) and finished there.
      for (const id of heldByVictim) {
        const again = started(survivor, id);
        expect(again.length, `task ${id} redelivered to the survivor`).toBeGreaterThan(0);
        expect(again.at(-1)!.attempt, `task ${id} attempt on the survivor`).toBeGreaterThanOrEqual(2);
        expect(succeeded(survivor, id)).toHaveLength(1);
      }
      // No failure anywhere.
      for (const w of workers) expect(w.logs.filter((l) => /task failed|out of attempts/.test(l.msg)), w.name).toEqual([]);
      const states = await db.selectFrom('tasks').select(['id', 'state', 'charged']).where('account_id', '=', accountId).execute();
      expect(states).toHaveLength(tasks.length);
      for (const s of states) expect(s.state, s.id).toBe('success');

      // Charged exactly once: one ledger row per task, equal to the credits the API reports; the balance adds up.
      const ledger = await db.selectFrom('ledger').select(['task_id', 'amount', 'reason']).where('account_id', '=', accountId).execute();
      const charges = ledger.filter((e) => e.reason === 'task_charge');
      expect(ledger.filter((e) => e.reason !== 'task_charge' && e.task_id !== null)).toEqual([]);
      for (const t of tasks) {
        const rows = charges.filter((e) => e.task_id === t.id);
        expect(rows, `ledger rows of ${t.kind} ${t.id}`).toHaveLength(1);
        const credits = t.kind === 'podcast_script' ? 0 : (answers.get(t.id).data.credits as number);
        if (t.kind !== 'podcast_script') expect(credits, `${t.kind} credits`).toBeGreaterThan(0);
        expect(Number(rows[0]!.amount)).toBe(0 - credits); // 0 - 0 is +0, as stored (-credits would be -0)
        expect(Number(states.find((s) => s.id === t.id)!.charged)).toBe(credits);
      }
      expect(charges).toHaveLength(tasks.length);
      const spent = tasks.reduce((sum, t) => sum + (t.kind === 'podcast_script' ? 0 : (answers.get(t.id).data.credits as number)), 0);
      const account = await db.selectFrom('accounts').select('balance').where('id', '=', accountId).executeTakeFirstOrThrow();
      expect(Number(account.balance)).toBe(INITIAL_CREDITS - spent);

      // Every result downloads from the URL the API handed out (the API streams it from the bucket).
      const urls: string[] = [];
      for (const t of tasks) {
        const d = answers.get(t.id).data;
        if (t.kind === 'tts') urls.push(d.output);
        if (t.kind === 'enhance') urls.push(d.output, d.result);
        if (t.kind === 'separation') {
          expect(Object.keys(d.output).length).toBeGreaterThan(0);
          urls.push(...(Object.values(d.output) as string[]), d.zip_url);
        }
        if (t.kind === 'podcast_audio') urls.push(d.file_url);
      }
      for (const url of urls) {
        expect(typeof url === 'string' && url.startsWith(`${apiBase}/files/`), String(url)).toBe(true);
        const res = await fetch(url);
        expect(res.status, url).toBe(200);
        expect((await res.arrayBuffer()).byteLength, url).toBeGreaterThan(0);
      }
      // Nothing left behind in the queues: no job waiting, running, delayed or parked as failed.
      const redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: 1 });
      try {
        await until('the queues to empty', async () => {
          const multi = redis.multi();
          for (const kind of ['tts', 'enhance', 'separation', 'podcast_script', 'podcast_audio']) {
            const q = `${QUEUE_PREFIX}:soundry-${kind}`;
            multi.llen(`${q}:wait`).llen(`${q}:active`).zcard(`${q}:delayed`).zcard(`${q}:failed`);
          }
          const counts = ((await multi.exec()) ?? []).map(([err, n]) => (err ? -1 : Number(n)));
          return counts.every((n) => n === 0);
        }, 10_000, 250);
      } finally {
        redis.disconnect();
      }
      timings.verified = elapsed();

      // The deployment is as meant (no start-up warning about it), and nothing went wrong on the living nodes.
      for (const n of nodes) expect(n.logs.filter((l) => /^ROLE=/.test(l.msg)), `${n.name} configuration warnings`).toEqual([]);
      for (const n of [api, survivor]) expect(n.logs.filter((l) => l.level >= 50), `${n.name} errors`).toEqual([]);

      // The rest stop cleanly.
      for (const n of [api, survivor]) n.child.kill('SIGTERM');
      await Promise.all([api, survivor].map((n) => exited(n.child)));
      expect(api.child.exitCode).toBe(0);
      expect(survivor.child.exitCode).toBe(0);
      const perTask = workers.flatMap((w) => succeeded(w).map((l) => `${w.name} ${l.kind} attempt ${l.attempt} ${Number(l.seconds).toFixed(1)}s`));
      const warnings = nodes.map((n) => `${n.name}: ${[...new Set(n.logs.filter((l) => l.level === 40).map((l) => l.msg))].join(' | ') || 'none'}`);
      console.log(`scale-out run ${run}: ${JSON.stringify(timings)}; victim ${victim.name} held ${heldByVictim.length} task(s); ${perTask.join('; ')}; warnings: ${warnings.join('; ')}`);
    } catch (err) {
      for (const n of nodes) {
        console.error(`---- ${n.name} (exit ${n.child.exitCode} ${n.child.signalCode}) last lines ----\n` +
          n.logs.slice(-40).map((l) => JSON.stringify(l)).join('\n') + '\n' + n.stderr.slice(-20).join('\n'));
      }
      console.error(`timings: ${JSON.stringify(timings)} at ${elapsed()}`);
      throw err;
    }
  }, 240_000);
});
