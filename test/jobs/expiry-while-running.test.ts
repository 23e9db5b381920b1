import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalBlobStore } from '../../src/adapters/local-blob-store.js';
import { SqlAccountStore } from '../../src/adapters/sql/account-store.js';
import { SqlJobQueue } from '../../src/adapters/sql/queue.js';
import { SqlTaskStore } from '../../src/adapters/sql/task-store.js';
import { KEPT_AFTER_FINISHING_MS } from '../../src/adapters/sql/expiry.js';
import { openSqlite } from '../../src/adapters/sqlite/database.js';
import { queuePolicy } from '../../src/app/queue-policy.js';
import { loadConfig } from '../../src/config/config.js';
import { newTaskId } from '../../src/domain/task.js';
import type { TaskHandler } from '../../src/jobs/handler.js';
import { JobRunner } from '../../src/jobs/runner.js';
import { issueApiKey } from '../../src/services/auth.js';
import { Metrics } from '../../src/services/metrics.js';
import { EXPIRED_IN_QUEUE_REASON, RetentionReaper } from '../../src/services/retention.js';

/**
 * Found from outside (TASK_TTL_SECONDS=60, separations of an 8-minute input): the reaper deleted tasks still running
 * at their expiry; their workers went on, wrote 182 MB of results under tasks/<id>/ that nothing would ever remove,
 * charged nothing, and the user lost the result; queued ones were dropped without a word. Now a running task is left
 * to finish and is then kept a while, a queued one is failed (releasing its hold), and a worker whose task was deleted
 * anyway removes what it wrote. Real SQLite store, queue, runner, reaper and local blob store.
 */
type Db = Awaited<ReturnType<typeof openSqlite>>;
let dir: string;
let db: Db;
let tasks: SqlTaskStore;
let blobs: LocalBlobStore;
let reaper: RetentionReaper;
let owner: { accountId: string; keyId: string };

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'soundry-expiry-'));
  db = await openSqlite(join(dir, 'soundry.db'));
  tasks = new SqlTaskStore(db);
  blobs = new LocalBlobStore(join(dir, 'files'));
  reaper = new RetentionReaper({ tasks, blobs, logger: pino({ level: 'silent' }) }, 60_000, 3_600_000, 3_600_000);
  const issued = await issueApiKey(new SqlAccountStore(db), { credits: 100, rateLimit: null, concurrency: null });
  owner = { accountId: issued.account.id, keyId: issued.key.id };
});
afterAll(async () => {
  await db?.destroy();
  await rm(dir, { recursive: true, force: true });
});

/** A task created `ageMs` ago whose TTL was `ttlMs` (so it expired `ageMs - ttlMs` ago), holding `hold`. */
async function task(ageMs: number, ttlMs: number, hold = 0): Promise<string> {
  const id = newTaskId(Date.now(), randomUUID().replace(/-/g, ''));
  const createdAt = Date.now() - ageMs;
  const made = await tasks.createWithinLimit({ id, kind: 'tts', accountId: owner.accountId, apiKeyId: owner.keyId, params: {}, createdAt, expiresAt: createdAt + ttlMs, hold }, 100);
  expect(made.created).toBe(true);
  return id;
}

const held = async () => Number((await db.selectFrom('accounts').select('held').where('id', '=', owner.accountId).executeTakeFirstOrThrow()).held);

describe('tasks that reach their expiry unfinished', () => {
  it('a running task is left to finish, then kept min(TTL, 1 h) after; a queued one is failed and its hold released', async () => {
    const running = await task(120_000, 60_000);
    await tasks.markRunning(running, Date.now());
    const queued = await task(120_000, 60_000, 7);
    expect(await held()).toBe(7);

    await reaper.sweep();
    expect((await tasks.get(running))?.state).toBe('running');
    expect(await tasks.get(queued)).toMatchObject({ state: 'failed', error: EXPIRED_IN_QUEUE_REASON });
    expect(await held()).toBe(0);

    // Finishing now, a minute past its expiry: kept its TTL (60 s) from now, so its owner can fetch the result.
    const before = Date.now();
    expect(await tasks.completeSuccess(running, { result: {}, engine: 'e', price: 1 }, before)).toBe(true);
    expect((await tasks.get(running))?.expiresAt).toBe(before + 60_000);
    await reaper.sweep();
    expect((await tasks.get(running))?.state).toBe('success');
    // The failed one too; both go once that has passed.
    await reaper.sweep(before + 61_000);
    expect(await tasks.get(running)).toBeNull();
    expect(await tasks.get(queued)).toBeNull();
  });

  it('a long TTL gives an hour after finishing; a task finishing well before its expiry keeps it', async () => {
    const late = await task(8 * 86_400_000, 7 * 86_400_000);
    await tasks.markRunning(late, Date.now());
    const now = Date.now();
    expect(await tasks.completeFailure(late, 'boom', now)).toBe(true);
    expect((await tasks.get(late))?.expiresAt).toBe(now + KEPT_AFTER_FINISHING_MS);
    const early = await task(1000, 7 * 86_400_000);
    const expiresAt = (await tasks.get(early))!.expiresAt;
    expect(await tasks.completeSuccess(early, { result: {}, engine: 'e', price: 1 }, Date.now())).toBe(true);
    expect((await tasks.get(early))?.expiresAt).toBe(expiresAt);
  });

  it('a worker whose task was deleted while it ran removes the files it wrote and charges nothing', async () => {
    const id = await task(0, 3_600_000);
    const balance = async () => Number((await db.selectFrom('accounts').select('balance').where('id', '=', owner.accountId).executeTakeFirstOrThrow()).balance);
    const credits = await balance();
    const handler: TaskHandler = {
      kind: 'tts',
      async run({ task: t, tmpDir }) {
        const file = join(tmpDir, 'out.mp3');
        await writeFile(file, Buffer.alloc(4096, 1));
        await blobs.putFile(`tasks/${t.id}/output.mp3`, file, 'audio/mpeg');
        // Deleted meanwhile (an operator, or a reaper of an older release).
        await tasks.delete(t.id);
        return { result: { outputKey: `tasks/${t.id}/output.mp3` }, engine: 'test-engine', price: 3, audioSeconds: 1 };
      },
    };
    const queue = new SqlJobQueue(db, { pollIntervalMs: 1000, logger: pino({ level: 'silent' }) });
    const runner = new JobRunner(
      { queue, tasks, handlers: new Map([['tts', handler]]), metrics: new Metrics(queue), logger: pino({ level: 'silent' }), blobs },
      { kinds: ['tts'], policy: queuePolicy(loadConfig({ DATA_DIR: dir })), tmpDir: dir },
    );
    expect(await runner.run({ taskId: id, kind: 'tts', attempt: 1, maxAttempts: 3 }, new AbortController().signal)).toEqual({ status: 'done' });
    expect(await blobs.stat(`tasks/${id}/output.mp3`)).toBeNull();
    expect(await balance()).toBe(credits);
  });
});
