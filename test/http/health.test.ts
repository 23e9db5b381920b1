import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';

describe('health and readiness', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(async () => app?.close());

  it('/healthz names the role and each dependency of this node', async () => {
    const res = await fetch(`${app.baseUrl}/healthz`);
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body).toMatchObject({ status: 'ok', role: 'all', database: 'ok', queue: app.config.REDIS_URL ? 'redis' : 'sql', blobs: app.config.BLOB_STORE });
    expect(body.workers).toContain('tts');
  });

  it('/healthz answers 503 naming the dependency that is down', async () => {
    const { checks } = app.container.health;
    const broken = { name: 'blobs', check: async () => { throw new Error('disk unplugged'); } };
    const i = checks.findIndex((c) => c.name === 'blobs');
    const saved = checks[i]!;
    (checks as Array<typeof saved>)[i] = broken;
    try {
      const res = await fetch(`${app.baseUrl}/healthz`);
      expect(res.status).toBe(503);
      expect(await res.json()).toMatchObject({ status: 'unavailable', blobs: 'unavailable: disk unplugged', database: 'ok' });
      expect((await fetch(`${app.baseUrl}/readyz`)).status).toBe(503);
    } finally {
      (checks as Array<typeof saved>)[i] = saved;
    }
  });

  it('/readyz answers 200 while the node takes requests', async () => {
    const res = await fetch(`${app.baseUrl}/readyz`);
    expect(res.status).toBe(200);
    expect((await res.json()).status).toBe('ok');
  });
});
