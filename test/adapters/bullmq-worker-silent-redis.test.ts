import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { Kysely } from 'kysely';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { BullMqJobQueue } from '../../src/adapters/bullmq/queue.js';
import { openSqlite } from '../../src/adapters/sqlite/database.js';
import type { Database } from '../../src/adapters/sql/schema.js';
import { SqlTaskStore } from '../../src/adapters/sql/task-store.js';
import type { JobConsumer } from '../../src/ports/queue.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { gates, newId, policyOf, recorder, until } from './queue-contract.js';

/**
 * A worker whose Redis went silent without closing its connections (a paused or frozen Redis, a partition that drops
 * packets, a failover that leaves the old connections dead) sat stuck without a word: its commands waited for TCP
 * keep-alive (minutes). Now it says so within seconds, and takes jobs again once Redis answers.
 *
 * A Redis of this test's own (SIGSTOP would freeze the shared one under other suites), and a real BullMQ worker.
 */
const TIMEOUT_MS = 1000;

let redis: ChildProcess;
let redisUrl: string;
let dir: string;
let db: Kysely<Database>;
let proxy: TcpProxy | undefined;
let queue: BullMqJobQueue | undefined;
let consumer: JobConsumer | undefined;
let lines: { level: number; msg: string; at: number }[] = [];

/** The log as the operator reads it: JSON lines, kept with the time each was written. */
const logger = pino(
  { level: 'info' },
  new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) {
        const { level, msg } = JSON.parse(line) as { level: number; msg: string };
        lines.push({ level, msg, at: Date.now() });
      }
      done();
    },
  }),
);

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

beforeAll(async () => {
  const port = await freePort();
  redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no'], { stdio: 'ignore' });
  redisUrl = `redis://127.0.0.1:${port}`;
  await until('the private Redis to listen', () => new Promise<boolean>((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => (s.destroy(), resolve(true))).on('error', () => resolve(false));
  }), 10_000);
  dir = await mkdtemp(join(tmpdir(), 'soundry-worker-silent-redis-'));
  db = await openSqlite(join(dir, 'soundry.db'));
});
afterEach(async () => {
  redis.kill('SIGCONT');
  await consumer?.stop(1000);
  await queue?.close();
  await proxy?.close();
  consumer = queue = proxy = undefined;
  lines = [];
});
afterAll(async () => {
  await db?.destroy();
  redis?.kill('SIGCONT');
  redis?.kill('SIGKILL');
  await rm(dir, { recursive: true, force: true });
});

/** A worker consuming, with a first job running (held until the test lets it finish). */
async function consuming(url: string) {
  queue = new BullMqJobQueue({ redisUrl: url, prefix: `silent-${newId().slice(0, 8)}`, logger, tasks: new SqlTaskStore(db), commandTimeoutMs: TIMEOUT_MS });
  const first = newId();
  const gate = gates();
  const r = recorder((job, signal) => (job.taskId === first ? gate.behave(job, signal) : Promise.resolve({ status: 'done' })));
  // A lease longer than the silence: the running job stays this worker's, as BullMQ's lock keeps it.
  consumer = await queue.consume(['tts'], r.handler, policyOf({}, { leaseMs: 10_000 }));
  await queue.enqueue({ taskId: first, kind: 'tts' });
  await until('the first job running', () => gate.running.has(first));
  return { queue, runs: r.runs, first, finish: () => gate.release(first) };
}

/** The job ran once and is finished: BullMQ removed it on completion. */
async function settledOnce(runs: { taskId: string }[], taskId: string) {
  await until('the job settled', async () => (await queue!.position({ taskId, kind: 'tts' })) === null, 10_000);
  expect(runs.filter((x) => x.taskId === taskId)).toHaveLength(1);
}

const said = (re: RegExp, level?: number) => lines.find((l) => re.test(l.msg) && (level === undefined || l.level === level));

describe('a BullMQ worker whose Redis goes silent', () => {
  it('says so within seconds when Redis freezes (SIGSTOP), and takes a new job once it answers again', async () => {
    const { queue, runs, first, finish } = await consuming(redisUrl);
    const address = new URL(redisUrl).host;
    const stoppedAt = Date.now();
    redis.kill('SIGSTOP');
    const warned = await until('the warning', () => said(/Redis .* has not answered the workers/, 40), 10_000);
    expect(warned.msg).toContain(address);
    const detectedMs = warned.at - stoppedAt;
    console.log(`silent Redis (SIGSTOP) noticed after ${detectedMs} ms`);
    expect(detectedMs).toBeLessThan(4 * TIMEOUT_MS);
    // What /healthz's queue check runs on every node: it fails too, rather than waiting.
    await expect(queue.ping()).rejects.toThrow();
    // The running job finishes while Redis is frozen: its completion waits for Redis, and is not sent twice.
    finish();

    redis.kill('SIGCONT');
    const back = await until('Redis said to answer again', () => said(/Redis .* answers the workers again/, 30), 10_000);
    expect(back.msg).toContain(address);
    const next = newId();
    await queue.enqueue({ taskId: next, kind: 'tts' });
    await until('a job queued after Redis came back delivered', () => runs.some((x) => x.taskId === next), 10_000);
    await settledOnce(runs, first);
    // One line for the whole silence, not one per check.
    expect(lines.filter((l) => /has not answered the workers/.test(l.msg))).toHaveLength(1);
  }, 30_000);

  it('opens its connections again when they went dead for good while Redis itself still answers (a failover, a cut)', async () => {
    const target = new URL(redisUrl);
    proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port) });
    const { queue, runs, first, finish } = await consuming(proxy.url);
    const address = new URL(proxy.url).host;
    const cutAt = Date.now();
    proxy.blackhole();
    // Its completion is written to the dead connection, and sent again on the new one.
    finish();
    const warned = await until('the warning', () => said(/Redis .* has not answered the workers/, 40), 10_000);
    expect(warned.msg).toContain(address);
    console.log(`dead Redis connections noticed after ${warned.at - cutAt} ms`);
    await until('Redis said to answer again', () => said(/Redis .* answers the workers again/, 30), 10_000);
    // The worker's old connection never answers again: the job is fetched and settled on new ones. (The producer's
    // connection went dead too: its first add fails, and the connection is opened again.)
    const next = newId();
    await until('the job queued', () => queue.enqueue({ taskId: next, kind: 'tts' }).then(() => true, () => false), 10_000);
    await until('a job queued after the cut delivered', () => runs.some((x) => x.taskId === next), 15_000);
    await settledOnce(runs, first);
  }, 30_000);
});
