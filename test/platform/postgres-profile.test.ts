import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialectOf } from '../../src/adapters/sql/dialect.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';

const API = '/audio/api/v1/api-keys';
const TTS_CREATE = `${API}/tts/task/create`;
const TTS_GET = `${API}/tts/task/get`;

/**
 * The server on PostgreSQL (DATABASE_URL) through HTTP: an API node that only accepts tasks and a
 * second node with workers, sharing one throwaway database. Fails, never skips, without Postgres.
 */
let pg: TestDatabase;
let api: TestApp;
let voiceId: number;
const ttsBody = (text = 'Hello there.') => ({ voice_id: voiceId, emotion: 0, speed: 1, language: 'en', text });

beforeAll(async () => {
  pg = await createTestDatabase();
  api = await startTestApp({ DATABASE_URL: pg.url, SIGNING_SECRET: 'postgres-profile-test-secret', ROLE: 'api' }, { workers: false });
  const { key } = await api.newKey();
  voiceId = (await api.get(`${API}/tts/voices?language=en`, key)).json.data.records[0].id;
});
afterAll(async () => {
  await api?.close();
  await pg?.drop();
});

describe('Postgres profile', () => {
  it('reports the database healthy', async () => {
    expect(dialectOf(api.container.db)).toBe('postgres');
    const res = await fetch(`${api.baseUrl}/healthz`);
    expect(res.status).toBe(200);
  });

  it('holds the unfinished-task limit under 40 concurrent creates on one key', async () => {
    const { key, keyId } = await api.newKey({ concurrency: 5 });
    const answers = await Promise.all(Array.from({ length: 40 }, () => api.post(TTS_CREATE, ttsBody(), key)));
    const codes = answers.map((a) => a.json.code as number);
    expect(codes.filter((c) => c === 100000)).toHaveLength(5);
    expect(codes.filter((c) => c === 101004)).toHaveLength(35);
    expect(await api.container.tasks.countUnfinishedForKey(keyId, 100)).toBe(5);
    // Out of the way of the worker node below: finished tasks are not run.
    for (const a of answers) if (a.json.code === 100000) await api.container.tasks.completeFailure(a.json.data.job_id, 'test cleanup', Date.now());
  });

  it('a worker node on the same database runs a task created on the API node, charging once', async () => {
    const { key, accountId } = await api.newKey({ credits: 100 });
    const created = await api.post(TTS_CREATE, ttsBody('A short sentence for the worker node.'), key);
    expect(created.json.code).toBe(100000);
    const worker = await startTestApp({ DATABASE_URL: pg.url, SIGNING_SECRET: 'postgres-profile-test-secret', ROLE: 'all' });
    try {
      const done = await api.waitTask(TTS_GET, 'global_id', created.json.data.job_id, key, 120_000);
      expect(done.data.status).toBe('success');
      const task = (await api.container.tasks.get(created.json.data.job_id))!;
      expect(task.charged).toBeGreaterThan(0);
      expect((await api.container.accounts.getAccount(accountId))!.balance).toBe(100 - task.charged!);
      const charges = (await api.container.accounts.ledger(accountId, 10)).filter((e) => e.reason === 'task_charge');
      expect(charges).toEqual([expect.objectContaining({ taskId: task.id, amount: -task.charged! })]);
    } finally {
      await worker.close();
    }
  }, 180_000);
});
