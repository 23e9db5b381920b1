import { existsSync } from 'node:fs';
import { mkdtemp, open, readdir, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/app.js';
import { exited, ServerProcesses, until } from '../helpers/processes.js';
import { serverData } from '../helpers/server-data.js';

const API = '/audio/api/v1/api-keys';
const servers = new ServerProcesses();
const startServer = (env: Record<string, string>) => servers.start(env);

afterAll(() => servers.killAll());

describe('durable tasks across a crash and a graceful stop', () => {
  it('a task running when the process is killed finishes after restart, charged exactly once', async () => {
    const { dataDir, port, db, issued, base, post, close } = await serverData('soundry-recovery-');
    const env = { DATA_DIR: dataDir, PORT: String(port), LEASE_SECONDS: '2', TTS_MAX_CHARS: '100000', WORKER_CONCURRENCY: '1', WORKER_THREADS: '1', POLL_INTERVAL_MS: '50' };
    try {
      const first = startServer(env);
      await until('health', async () => (await fetch(`${base}/healthz`)).ok);
      const voices = await (await fetch(`${base}${API}/tts/voices?language=en`, { headers: { 'api-key': issued.apiKey } })).json() as any;
      const text = 'The quick brown fox jumps over the lazy dog, and keeps on running through the long summer afternoon. '.repeat(60);
      const created = await post('/tts/task/create', { voice_id: voices.data.records[0].id, emotion: 0, speed: 1, language: 'en', text });
      expect(created.code).toBe(100000);
      const id = created.data.job_id as string;
      await until('task running', async () => (await db.selectFrom('tasks').select('state').where('id', '=', id).executeTakeFirst())?.state === 'running');
      // The task's temp folder, inside the process's own folder under TMP_DIR.
      const tmp = join(dataDir, 'tmp');
      const taskDir = await until('task temp folder', async () => {
        for (const proc of await readdir(tmp)) {
          const mine = (await readdir(join(tmp, proc)).catch(() => [])).find((n) => n.startsWith(`${id}-`));
          if (mine) return join(tmp, proc, mine);
        }
        return null;
      });
      first.kill('SIGKILL');
      await exited(first);
      expect(existsSync(taskDir)).toBe(true); // what kill -9 leaves behind

      startServer(env);
      await until('health after restart', async () => (await fetch(`${base}/healthz`)).ok);
      // Swept at start-up: the killed process's whole folder (its task folders and engine scratch) is gone.
      expect(existsSync(dirname(taskDir))).toBe(false);
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
      servers.signalAll('SIGTERM');
      await Promise.all(servers.all().map(exited));
      await close();
    }
  }, 240_000);

  it('SIGTERM drains: the running task finishes before the process exits 0', async () => {
    const { dataDir, port, db, issued, base, close } = await serverData('soundry-drain-');
    try {
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
      await close();
    }
  }, 120_000);

  it('SIGTERM keeps the listener open: while the drain lasts, new connections get the 503 envelope, not "connection refused"; then exit 0', async () => {
    const { dataDir, port, db, issued, base, close } = await serverData('soundry-drain-open-', { rateLimit: 100_000 });
    try {
      // A task longer than the grace holds the drain open for SHUTDOWN_GRACE_SECONDS, then goes back to the queue.
      const server = startServer({ DATA_DIR: dataDir, PORT: String(port), WORKER_THREADS: '1', POLL_INTERVAL_MS: '50', SHUTDOWN_GRACE_SECONDS: '4', TTS_MAX_CHARS: '100000' });
      await until('health', async () => (await fetch(`${base}/healthz`)).ok);
      const voices = (await (await fetch(`${base}${API}/tts/voices?language=en`, { headers: { 'api-key': issued.apiKey } })).json()) as any;
      const text = 'The quick brown fox jumps over the lazy dog, and keeps on running through the long summer afternoon. '.repeat(100);
      const res = await fetch(`${base}${API}/tts/task/create`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'api-key': issued.apiKey },
        body: JSON.stringify({ voice_id: voices.data.records[0].id, emotion: 0, speed: 1, language: 'en', text }),
      });
      const id = ((await res.json()) as any).data.job_id as string;
      await until('task running', async () => (await db.selectFrom('tasks').select('state').where('id', '=', id).executeTakeFirst())?.state === 'running');

      const t0 = Date.now();
      server.kill('SIGTERM');
      const exit = exited(server);
      let gone = false;
      void exit.then(() => (gone = true));
      const answers: Array<{ at: number; status: number | string; code?: number; connection?: string | null; retryAfter?: string | null }> = [];
      while (!gone) {
        const at = Date.now() - t0;
        try {
          const r = await fetch(`${base}${API}/tts/task/get`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'api-key': issued.apiKey },
            body: JSON.stringify({ global_id: id }),
          });
          const body = (await r.json()) as any;
          answers.push({ at, status: r.status, code: body.code, connection: r.headers.get('connection'), retryAfter: r.headers.get('retry-after') });
        } catch (err) {
          answers.push({ at, status: String((err as any).cause?.code ?? err) });
        }
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(await exit).toBe(0);
      const elapsed = Date.now() - t0;
      // The whole grace (4 s) was spent draining, and every request in its first 3.5 s was answered 503/100503.
      expect(elapsed).toBeGreaterThanOrEqual(3500);
      // (A request sent in the instant before the process handled the signal may still be served normally.)
      const first503 = answers.findIndex((a) => a.status === 503);
      expect(answers[first503]!.at).toBeLessThan(500);
      const during = answers.slice(first503).filter((a) => a.at < 3500);
      expect(during.length).toBeGreaterThanOrEqual(10);
      for (const a of during) expect(a).toEqual({ at: a.at, status: 503, code: 100503, connection: 'close', retryAfter: '5' });
      console.log(`drain: ${elapsed} ms to exit; ${answers.filter((a) => a.status === 503).length} answers 503; others: ${JSON.stringify(answers.filter((a) => a.status !== 503))}`);
      // The task that outlived the grace went back to the queue (not failed, not charged).
      const task = await db.selectFrom('tasks').select(['state', 'charged']).where('id', '=', id).executeTakeFirstOrThrow();
      expect(task.state).toBe('running');
      expect(task.charged).toBeNull();
      const job = await db.selectFrom('jobs').select(['state', 'attempts']).where('task_id', '=', id).executeTakeFirstOrThrow();
      expect(job).toEqual({ state: 'queued', attempts: 0 });
    } finally {
      await close();
    }
  }, 180_000);

  it('a SIGTERM during start-up stops it cleanly (exit 0, nothing listening, nothing left in TMP_DIR)', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'soundry-early-term-'));
    const port = await freePort();
    try {
      const child = servers.spawn({ DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: 'info' }, ['ignore', 'pipe', 'pipe']);
      let log = '';
      child.stdout!.on('data', (d) => {
        log += String(d);
        // The first line main logs, once its handlers are in place and before the container is built.
        if (log.includes('"msg":"starting"') && !child.killed) child.kill('SIGTERM');
      });
      child.stderr!.on('data', (d) => (log += String(d)));
      expect(await exited(child)).toBe(0);
      expect(log).toContain('stop requested during start-up');
      expect(log).toContain('"msg":"stopped"');
      expect(log).not.toContain('Soundry is listening');
      expect(await fetch(`http://127.0.0.1:${port}/healthz`).then(() => 'answered', () => 'refused')).toBe('refused');
      expect(await readdir(join(dataDir, 'tmp'))).toEqual([]);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});

/** Runs the server until it exits by itself (a refused start), with its stderr. */
function startExpectingExit(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  const child = servers.spawn(env);
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += String(d)));
  return new Promise((r) => child.once('exit', (code) => r({ code, stderr })));
}

describe('a lost or damaged SQLite database stops start-up instead of starting empty', () => {
  it('deleted after a clean run: refused with a message naming the file; damaged: refused; a normal restart works', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'soundry-lostdb-'));
    const port = await freePort();
    const env = { DATA_DIR: dataDir, PORT: String(port) };
    const dbPath = join(dataDir, 'soundry.db');
    const base = `http://127.0.0.1:${port}`;
    try {
      for (let run = 0; run < 2; run++) {
        // The first run creates the database; the second is a normal restart on it.
        const server = startServer(env);
        await until('health', async () => (await fetch(`${base}/healthz`)).ok);
        server.kill('SIGTERM');
        expect(await exited(server)).toBe(0);
      }
      await rename(dbPath, `${dbPath}.aside`);
      const missing = await startExpectingExit(env);
      expect(missing.code).toBe(1);
      expect(missing.stderr).toContain(`Soundry cannot start: The database ${dbPath} is missing`);
      expect(missing.stderr).toContain('restore soundry.db from a backup');
      expect(missing.stderr).not.toMatch(/\n\s+at /); // a message, not a stack trace
      expect(existsSync(dbPath)).toBe(false);

      await rename(`${dbPath}.aside`, dbPath);
      // Garbage over every page but the first (the header and schema stay readable).
      const fh = await open(dbPath, 'r+');
      const size = (await fh.stat()).size;
      await fh.write(Buffer.alloc(size - 4096, 0x5a), 0, size - 4096, 4096);
      await fh.close();
      const damaged = await startExpectingExit(env);
      expect(damaged.code).toBe(1);
      expect(damaged.stderr).toContain(`Soundry cannot start: The database ${dbPath} is damaged`);
    } finally {
      servers.killAll();
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});
