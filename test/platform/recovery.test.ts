import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openSqlite } from '../../src/adapters/sqlite/database.js';
import { SqlAccountStore } from '../../src/adapters/sql/account-store.js';
import { issueApiKey } from '../../src/services/auth.js';
import { freePort } from '../helpers/app.js';

const API = '/audio/api/v1/api-keys';
const root = new URL('../..', import.meta.url).pathname;
const children: ChildProcess[] = [];

function startServer(env: Record<string, string>): ChildProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: root,
    env: { ...process.env, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (d) => (stderr = (stderr + String(d)).slice(-4000)));
  child.on('exit', (code, signal) => {
    if (code && code !== 0) console.error(`server exited ${code} ${signal}: ${stderr}`);
  });
  children.push(child);
  return child;
}

async function until<T>(what: string, fn: () => Promise<T | undefined | null | false>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch {
      /* not yet */
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// A process killed by a signal has exitCode null and signalCode set: both mean it is gone.
const exited = (child: ChildProcess) =>
  new Promise<number | null>((r) => (child.exitCode !== null || child.signalCode !== null ? r(child.exitCode) : child.once('exit', (code) => r(code))));

afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

describe('durable tasks across a crash and a graceful stop', () => {
  it('a task running when the process is killed finishes after restart, charged exactly once', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'soundry-recovery-'));
    const port = await freePort();
    const env = { DATA_DIR: dataDir, PORT: String(port), LEASE_SECONDS: '2', TTS_MAX_CHARS: '100000', WORKER_CONCURRENCY: '1', WORKER_THREADS: '1', POLL_INTERVAL_MS: '50' };
    const db = await openSqlite(join(dataDir, 'soundry.db'));
    try {
      const issued = await issueApiKey(new SqlAccountStore(db), { credits: 1000, rateLimit: 1000, concurrency: null });
      const base = `http://127.0.0.1:${port}`;
      const post = async (path: string, body: unknown) =>
        (await fetch(`${base}${API}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'api-key': issued.apiKey }, body: JSON.stringify(body) })).json() as Promise<any>;

      const first = startServer(env);
      await until('health', async () => (await fetch(`${base}/healthz`)).ok);
      const voices = await (await fetch(`${base}${API}/tts/voices?language=en`, { headers: { 'api-key': issued.apiKey } })).json() as any;
      const text = 'The quick brown fox jumps over the lazy dog, and keeps on running through the long summer afternoon. '.repeat(60);
      const created = await post('/tts/task/create', { voice_id: voices.data.records[0].id, emotion: 0, speed: 1, language: 'en', text });
      expect(created.code).toBe(100000);
      const id = created.data.job_id as string;
      await until('task running', async () => (await db.selectFrom('tasks').select('state').where('id', '=', id).executeTakeFirst())?.state === 'running');
      first.kill('SIGKILL');
      await exited(first);

      startServer(env);
      const done = await until('task finished', async () => {
        const q = await post('/tts/task/get', { global_id: id });
        return q.data?.status !== 'waiting' ? q : null;
      }, 120_000);
      expect(done.data.status).toBe('success');
      const price = Math.ceil([...text].length / 100);
      const charges = await db.selectFrom('ledger').selectAll().where('task_id', '=', id).execute();
      expect(charges).toHaveLength(1);
      expect(Number(charges[0]!.amount)).toBe(-price);
      const account = await db.selectFrom('accounts').select('balance').where('id', '=', issued.account.id).executeTakeFirstOrThrow();
      expect(Number(account.balance)).toBe(1000 - price);
      const job = await db.selectFrom('tasks').select(['charged']).where('id', '=', id).executeTakeFirstOrThrow();
      expect(Number(job.charged)).toBe(price);
    } finally {
      for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGTERM');
      await Promise.all(children.map(exited));
      await db.destroy();
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 240_000);

  it('SIGTERM drains: the running task finishes before the process exits 0', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'soundry-drain-'));
    const port = await freePort();
    const db = await openSqlite(join(dataDir, 'soundry.db'));
    try {
      const issued = await issueApiKey(new SqlAccountStore(db), { credits: 1000, rateLimit: 1000, concurrency: null });
      const base = `http://127.0.0.1:${port}`;
      const server = startServer({ DATA_DIR: dataDir, PORT: String(port), WORKER_THREADS: '1', POLL_INTERVAL_MS: '50', SHUTDOWN_GRACE_SECONDS: '60' });
      await until('health', async () => (await fetch(`${base}/healthz`)).ok);
      const voices = await (await fetch(`${base}${API}/tts/voices?language=en`, { headers: { 'api-key': issued.apiKey } })).json() as any;
      const res = await fetch(`${base}${API}/tts/task/create`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'api-key': issued.apiKey },
        body: JSON.stringify({ voice_id: voices.data.records[0].id, emotion: 0, speed: 1, language: 'en', text: 'A sentence to finish while draining. '.repeat(40) }),
      });
      const id = ((await res.json()) as any).data.job_id as string;
      await until('task running', async () => (await db.selectFrom('tasks').select('state').where('id', '=', id).executeTakeFirst())?.state === 'running');
      server.kill('SIGTERM');
      expect(await exited(server)).toBe(0);
      const task = await db.selectFrom('tasks').select(['state']).where('id', '=', id).executeTakeFirstOrThrow();
      expect(task.state).toBe('success');
    } finally {
      await db.destroy();
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});
