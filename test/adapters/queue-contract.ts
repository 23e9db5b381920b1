import { fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { TaskKind } from '../../src/domain/task.js';
import type { DeliveredJob, ExhaustedCause, JobConsumer, JobHandler, JobResult, KindPolicy, QueuePolicy } from '../../src/ports/queue.js';
import { openFromEnv, type BackendEnv, type OpenedQueue } from './queue-backends.js';

/**
 * What every JobQueue adapter must do, run on each backend against a real server (modelled on
 * BullMQ's adapter-conformance idea). Leases, backoffs and polls are short to keep it fast.
 */

export interface Backend {
  env: BackendEnv;
  cleanup(): Promise<void>;
}

const BASE: KindPolicy = { concurrency: 1, maxAttempts: 3, leaseMs: 1000, backoff: { initialMs: 100, maxMs: 2000 } };

export function policyOf(overrides: Partial<Record<TaskKind, Partial<KindPolicy>>> = {}, base: Partial<KindPolicy> = {}): QueuePolicy {
  const p = (kind: TaskKind): KindPolicy => ({ ...BASE, ...base, ...overrides[kind] });
  return { tts: p('tts'), podcast_script: p('podcast_script'), separation: p('separation'), enhance: p('enhance'), podcast_audio: p('podcast_audio') };
}

export const newId = () => randomUUID().replace(/-/g, '');
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export async function until<T>(what: string, fn: () => T | Promise<T>, timeoutMs = 15_000): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** A handler that records what it is given; `behave` decides each delivery's result. */
export function recorder(behave: (job: DeliveredJob, signal: AbortSignal) => Promise<JobResult> = async () => ({ status: 'done' })) {
  const runs: (DeliveredJob & { at: number })[] = [];
  const exhausted: { job: DeliveredJob; why: ExhaustedCause }[] = [];
  const handler: JobHandler = {
    async run(job, signal) {
      runs.push({ ...job, at: Date.now() });
      return behave(job, signal);
    },
    async exhausted(job, why) {
      exhausted.push({ job, why });
    },
  };
  return { handler, runs, exhausted };
}

/** Jobs that run until the test lets them go (or the signal aborts them). */
export function gates() {
  const open = new Map<string, () => void>();
  const running = new Set<string>();
  return {
    running,
    release(taskId: string) {
      open.get(taskId)?.();
    },
    releaseAll() {
      for (const f of open.values()) f();
    },
    behave: (job: DeliveredJob, signal: AbortSignal) =>
      new Promise<JobResult>((resolve) => {
        running.add(job.taskId);
        const finish = (r: JobResult) => {
          running.delete(job.taskId);
          resolve(r);
        };
        open.set(job.taskId, () => finish({ status: 'done' }));
        signal.addEventListener('abort', () => finish({ status: 'retry', error: signal.reason }), { once: true });
      }),
  };
}

export function queueContract(name: string, fresh: () => Promise<Backend>): void {
  describe(`JobQueue contract: ${name}`, () => {
    const opened: OpenedQueue[] = [];
    const consumers: JobConsumer[] = [];
    const children: ChildProcess[] = [];
    let backend: Backend | null = null;

    async function setup(): Promise<Backend> {
      backend = await fresh();
      return backend;
    }
    async function open(env: BackendEnv) {
      const o = await openFromEnv(env);
      opened.push(o);
      return o.queue;
    }
    afterEach(async () => {
      for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
      children.length = 0;
      await Promise.all(consumers.splice(0).map((c) => c.stop(0)));
      await Promise.all(opened.splice(0).map((o) => o.close()));
      await backend?.cleanup();
      backend = null;
    });
    async function consume(queue: OpenedQueue['queue'], kinds: TaskKind[], handler: JobHandler, policy: QueuePolicy) {
      const c = await queue.consume(kinds, handler, policy);
      consumers.push(c);
      return c;
    }

    /** A consumer in another process that takes a job of `kind`, reports it, and hangs until killed. */
    async function dyingConsumer(env: BackendEnv, kind: TaskKind, policy: QueuePolicy) {
      const child = fork(new URL('./queue-child.ts', import.meta.url).pathname, [], {
        execArgv: ['--import', 'tsx'],
        env: { ...process.env, ...env, QUEUE_CHILD_KIND: kind, QUEUE_CHILD_POLICY: JSON.stringify(policy) },
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      children.push(child);
      const messages: { taskId?: string; attempt?: number; ready?: boolean }[] = [];
      child.on('message', (m) => messages.push(m as (typeof messages)[number]));
      await until('child consumer ready', () => messages.some((m) => m.ready), 30_000);
      return { child, messages };
    }

    it('delivers each job once, to one of two competing consumers', async () => {
      const { env } = await setup();
      const [q1, q2] = [await open(env), await open(env)];
      const hold = async () => {
        await sleep(20);
        return { status: 'done' } as const;
      };
      const a = recorder(hold);
      const b = recorder(hold);
      const policy = policyOf({ tts: { concurrency: 2 } });
      await consume(q1, ['tts'], a.handler, policy);
      await consume(q2, ['tts'], b.handler, policy);
      const ids = Array.from({ length: 30 }, newId);
      for (const id of ids) await q1.enqueue({ taskId: id, kind: 'tts' });
      await until('all delivered', () => a.runs.length + b.runs.length >= ids.length);
      await sleep(300);
      const seen = [...a.runs, ...b.runs].map((r) => r.taskId).sort();
      expect(seen).toEqual([...ids].sort());
      expect(a.runs.length).toBeGreaterThan(0);
      expect(b.runs.length).toBeGreaterThan(0);
      expect([...a.runs, ...b.runs].every((r) => r.attempt === 1)).toBe(true);
      expect((await q1.depth()).tts ?? 0).toBe(0);
    });

    it('enqueue is idempotent: the same task twice is one job', async () => {
      const { env } = await setup();
      const q = await open(env);
      const id = newId();
      await q.enqueue({ taskId: id, kind: 'tts' });
      await q.enqueue({ taskId: id, kind: 'tts' });
      expect((await q.depth()).tts).toBe(1);
      const r = recorder();
      await consume(q, ['tts'], r.handler, policyOf());
      await until('delivered', () => r.runs.length === 1);
      await sleep(300);
      expect(r.runs).toHaveLength(1);
    });

    it("runs at most the kind's concurrency at once", async () => {
      const { env } = await setup();
      const q = await open(env);
      let now = 0;
      let max = 0;
      const r = recorder(async () => {
        max = Math.max(max, ++now);
        await sleep(150);
        now--;
        return { status: 'done' };
      });
      await consume(q, ['enhance'], r.handler, policyOf({ enhance: { concurrency: 2 } }));
      for (let i = 0; i < 6; i++) await q.enqueue({ taskId: newId(), kind: 'enhance' });
      await until('all ran', () => r.runs.length === 6 && now === 0);
      expect(max).toBe(2);
    });

    it('retries a retryable failure after a growing backoff, the attempt number growing', async () => {
      const { env } = await setup();
      const q = await open(env);
      const r = recorder(async (job) => (job.attempt < 3 ? { status: 'retry', error: new Error(`flaky ${job.attempt}`) } : { status: 'done' }));
      await consume(q, ['tts'], r.handler, policyOf({}, { maxAttempts: 3, backoff: { initialMs: 200, maxMs: 5000 } }));
      const id = newId();
      await q.enqueue({ taskId: id, kind: 'tts' });
      await until('third attempt', () => r.runs.length === 3);
      expect(r.runs.map((x) => x.attempt)).toEqual([1, 2, 3]);
      expect(r.runs.every((x) => x.maxAttempts === 3)).toBe(true);
      expect(r.runs[1]!.at - r.runs[0]!.at).toBeGreaterThanOrEqual(180);
      expect(r.runs[2]!.at - r.runs[1]!.at).toBeGreaterThanOrEqual(380); // doubled
      await sleep(200);
      expect(r.exhausted).toHaveLength(0);
      expect(await q.position({ taskId: id, kind: 'tts' })).toBeNull();
    });

    it('out of attempts: the handler is told once, with the last error, and the job is gone', async () => {
      const { env } = await setup();
      const q = await open(env);
      const r = recorder(async () => ({ status: 'retry', error: new Error('still broken') }));
      await consume(q, ['tts'], r.handler, policyOf({}, { maxAttempts: 2 }));
      const id = newId();
      await q.enqueue({ taskId: id, kind: 'tts' });
      await until('exhausted', () => r.exhausted.length === 1);
      await sleep(400);
      expect(r.runs.map((x) => x.attempt)).toEqual([1, 2]);
      expect(r.exhausted).toHaveLength(1);
      const { job, why } = r.exhausted[0]!;
      expect(job).toMatchObject({ taskId: id, attempt: 2, maxAttempts: 2 });
      expect(why.cause).toBe('error');
      expect(why.cause === 'error' && (why.error as Error).message).toBe('still broken');
      expect(await q.position({ taskId: id, kind: 'tts' })).toBeNull();
      expect((await q.depth()).tts ?? 0).toBe(0);
    });

    it('a final failure is not retried', async () => {
      const { env } = await setup();
      const q = await open(env);
      const r = recorder(async () => ({ status: 'failed', reason: 'bad input' }));
      await consume(q, ['tts'], r.handler, policyOf());
      const id = newId();
      await q.enqueue({ taskId: id, kind: 'tts' });
      await until('ran', () => r.runs.length === 1);
      await sleep(500);
      expect(r.runs).toHaveLength(1);
      expect(r.exhausted).toHaveLength(0);
      expect(await q.position({ taskId: id, kind: 'tts' })).toBeNull();
    });

    it('a job whose consumer died is delivered again, to another consumer, as the next attempt', async () => {
      const { env } = await setup();
      const q = await open(env);
      const policy = policyOf({}, { maxAttempts: 3 });
      const dying = await dyingConsumer(env, 'separation', policy);
      const id = newId();
      await q.enqueue({ taskId: id, kind: 'separation' });
      await until('the child took it', () => dying.messages.some((m) => m.taskId === id));
      expect(dying.messages.find((m) => m.taskId === id)?.attempt).toBe(1);
      expect(await q.position({ taskId: id, kind: 'separation' })).toBe(0);
      dying.child.kill('SIGKILL');
      const r = recorder();
      await consume(q, ['separation'], r.handler, policy);
      await until('delivered again', () => r.runs.length === 1, 20_000);
      expect(r.runs[0]).toMatchObject({ taskId: id, attempt: 2 });
      expect(r.exhausted).toHaveLength(0);
    }, 60_000);

    it('when the consumer of the last attempt died, the handler is told instead of running it', async () => {
      const { env } = await setup();
      const q = await open(env);
      const policy = policyOf({}, { maxAttempts: 1 });
      const dying = await dyingConsumer(env, 'enhance', policy);
      const id = newId();
      await q.enqueue({ taskId: id, kind: 'enhance' });
      await until('the child took it', () => dying.messages.some((m) => m.taskId === id));
      dying.child.kill('SIGKILL');
      const r = recorder();
      await consume(q, ['enhance'], r.handler, policy);
      await until('exhausted', () => r.exhausted.length === 1, 20_000);
      expect(r.runs).toHaveLength(0);
      expect(r.exhausted[0]).toMatchObject({ job: { taskId: id, attempt: 2, maxAttempts: 1 }, why: { cause: 'lease-lost' } });
      await sleep(300);
      expect(await q.position({ taskId: id, kind: 'enhance' })).toBeNull();
    }, 60_000);

    it('graceful stop hands a running job back without spending an attempt (three stops during one job)', async () => {
      const { env } = await setup();
      const q = await open(env);
      const policy = policyOf({}, { maxAttempts: 2 });
      const id = newId();
      await q.enqueue({ taskId: id, kind: 'podcast_audio' });
      const attempts: number[] = [];
      for (let i = 0; i < 3; i++) {
        const g = gates();
        const r = recorder(g.behave);
        const c = await q.consume(['podcast_audio'], r.handler, policy);
        await until(`delivery ${i + 1}`, () => g.running.has(id));
        expect(c.isRunning()).toBe(true);
        await c.stop(50); // the job outlives the grace period: aborted and handed back
        expect(c.isRunning()).toBe(false);
        attempts.push(...r.runs.map((x) => x.attempt));
        expect(r.exhausted).toHaveLength(0);
        expect(await q.position({ taskId: id, kind: 'podcast_audio' })).toBe(1);
      }
      const last = recorder();
      await consume(q, ['podcast_audio'], last.handler, policy);
      await until('finished', () => last.runs.length === 1);
      attempts.push(last.runs[0]!.attempt);
      expect(attempts).toEqual([1, 1, 1, 1]);
      expect(last.exhausted).toHaveLength(0);
    }, 60_000);

    it('graceful stop lets a running job finish within the grace period', async () => {
      const { env } = await setup();
      const q = await open(env);
      let aborted = false;
      const r = recorder(async (_job, signal) => {
        await sleep(300);
        aborted = signal.aborted;
        return { status: 'done' };
      });
      const c = await q.consume(['tts'], r.handler, policyOf());
      const id = newId();
      await q.enqueue({ taskId: id, kind: 'tts' });
      await until('started', () => r.runs.length === 1);
      await c.stop(10_000);
      expect(aborted).toBe(false);
      expect(await q.position({ taskId: id, kind: 'tts' })).toBeNull();
    });

    it('position counts down 3, 2, 1, 0 among waiting jobs of its kind; depth counts per kind', async () => {
      const { env } = await setup();
      const q = await open(env);
      const [a, b, c] = [newId(), newId(), newId()];
      for (const id of [a, b, c]) await q.enqueue({ taskId: id, kind: 'enhance' });
      await q.enqueue({ taskId: newId(), kind: 'tts' }); // another kind does not count
      const pos = (id: string) => q.position({ taskId: id, kind: 'enhance' });
      expect([await pos(a), await pos(b), await pos(c)]).toEqual([1, 2, 3]);
      expect(await q.depth()).toMatchObject({ enhance: 3, tts: 1 });
      expect(await pos(newId())).toBeNull();
      const g = gates();
      const r = recorder(g.behave);
      await consume(q, ['enhance'], r.handler, policyOf({ enhance: { concurrency: 1 } }));
      const seen = [3];
      for (const id of [a, b, c]) {
        await until(`${id} running`, () => g.running.has(id));
        expect(await pos(id)).toBe(0);
        seen.push((await pos(c))!);
        g.release(id);
      }
      expect(seen).toEqual([3, 2, 1, 0]);
      await until('drained', async () => ((await q.depth()).enhance ?? 0) === 0 && g.running.size === 0);
    });

    it("a short kind's job starts while long jobs fill every slot of the long kind", async () => {
      const { env } = await setup();
      const q = await open(env);
      const g = gates();
      const r = recorder(g.behave);
      await consume(q, ['enhance', 'tts'], r.handler, policyOf({ enhance: { concurrency: 2 }, tts: { concurrency: 1 } }));
      const long = Array.from({ length: 5 }, newId);
      for (const id of long) await q.enqueue({ taskId: id, kind: 'enhance' });
      await until('long slots full', () => g.running.size === 2);
      const short = newId();
      const queuedAt = Date.now();
      await q.enqueue({ taskId: short, kind: 'tts' });
      await until('short job started', () => g.running.has(short), 3000);
      expect(Date.now() - queuedAt).toBeLessThan(2000);
      expect([...g.running].filter((id) => long.includes(id))).toHaveLength(2);
      expect((await q.depth()).enhance).toBe(3);
      g.releaseAll();
    });
  });
}
