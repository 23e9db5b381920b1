import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgres } from '../../src/adapters/postgres/database.js';
import type { Database } from '../../src/adapters/sql/schema.js';
import { SqlAccountStore } from '../../src/adapters/sql/account-store.js';
import { SqlTaskStore } from '../../src/adapters/sql/task-store.js';
import { SqlJobQueue } from '../../src/adapters/sql/queue.js';
import { isDatabaseUnavailable } from '../../src/adapters/sql/unavailable.js';
import { queuePolicy } from '../../src/app/queue-policy.js';
import { loadConfig } from '../../src/config/config.js';
import { newTaskId } from '../../src/domain/task.js';
import { JobRunner } from '../../src/jobs/runner.js';
import type { TaskHandler } from '../../src/jobs/handler.js';
import { Metrics } from '../../src/services/metrics.js';
import { issueApiKey } from '../../src/services/auth.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';

/**
 * A worker's task database goes away for a few seconds (a PostgreSQL restart or failover, here a TCP hop that cuts
 * every connection and refuses new ones) just as a task's work finishes. Before, recording the result failed the
 * attempt: the work was thrown away and run again, and an outage longer than the attempts' backoff (about 3 s)
 * failed the task. Real PostgreSQL, real store; the kind's work is a handler that cuts the database as it ends.
 */
const OUTAGE_MS = 3000;
let database: TestDatabase;
let direct: Kysely<Database>;
let proxy: TcpProxy;
let viaProxy: Kysely<Database>;
let tmp: string;

beforeAll(async () => {
  database = await createTestDatabase();
  direct = await openPostgres(database.url);
  const target = new URL(database.url);
  proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) }, 'postgres');
  const proxied = new URL(database.url);
  proxied.port = new URL(proxy.url).port;
  // The cut closes idle pooled connections too: the pool drops them (as the server's onIdleError does).
  viaProxy = await openPostgres(proxied.toString(), { onIdleError: () => undefined });
  tmp = await mkdtemp(join(tmpdir(), 'soundry-outage-'));
}, 60_000);
afterAll(async () => {
  await viaProxy?.destroy();
  await direct?.destroy();
  await proxy?.close();
  await database?.drop();
  await rm(tmp, { recursive: true, force: true });
});

async function runWithOutage(storeOutageMs: number) {
  const { key, account } = await issueApiKey(new SqlAccountStore(direct), { credits: 10, rateLimit: null, concurrency: null });
  const tasks = new SqlTaskStore(viaProxy);
  const id = newTaskId(Date.now(), randomUUID().replace(/-/g, ''));
  const created = await tasks.createWithinLimit({ id, kind: 'tts', accountId: account.id, apiKeyId: key.id, params: {}, createdAt: Date.now(), expiresAt: Date.now() + 3_600_000 }, 10);
  expect(created.created).toBe(true);
  let restored: Promise<void> = Promise.resolve();
  const handler: TaskHandler = {
    kind: 'tts',
    async run() {
      proxy.cut();
      restored = new Promise((resolve) => setTimeout(() => resolve(proxy.restore()), OUTAGE_MS));
      return { result: { output: 'made before the outage' }, engine: 'test-engine', price: 3, audioSeconds: 1 };
    },
  };
  const queue = new SqlJobQueue(direct, { pollIntervalMs: 1000, logger: pino({ level: 'silent' }) });
  const config = loadConfig({ DATA_DIR: tmp });
  const runner = new JobRunner(
    { queue, tasks, handlers: new Map([['tts', handler]]), metrics: new Metrics(queue), logger: pino({ level: 'silent' }), storeUnavailable: isDatabaseUnavailable },
    { kinds: ['tts'], policy: queuePolicy(config), tmpDir: tmp, storeOutageMs },
  );
  const outcome = await runner.run({ taskId: id, kind: 'tts', attempt: 1, maxAttempts: 3 }, new AbortController().signal);
  await restored;
  const row = await direct.selectFrom('tasks').select(['state', 'charged', 'engine']).where('id', '=', id).executeTakeFirstOrThrow();
  const balance = (await direct.selectFrom('accounts').select('balance').where('id', '=', account.id).executeTakeFirstOrThrow()).balance;
  return { outcome, row, balance: Number(balance) };
}

describe('a worker waits out a database outage around its task records', () => {
  it('the result made before the outage is recorded once the database is back: one attempt, charged once', async () => {
    const { outcome, row, balance } = await runWithOutage(30_000);
    expect(outcome).toEqual({ status: 'done' });
    expect(row).toEqual({ state: 'success', charged: 3, engine: 'test-engine' });
    expect(balance).toBe(7);
  }, 60_000);

  it('with STORE_OUTAGE_SECONDS=0 the attempt fails as before (the work is lost, nothing charged)', async () => {
    const { outcome, row, balance } = await runWithOutage(0);
    expect(outcome.status).toBe('retry');
    expect(row.state).toBe('running');
    expect(balance).toBe(10);
  }, 60_000);
});
