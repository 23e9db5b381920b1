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

  // Found from outside: a Redis or S3 outage made every API node unready at once, leaving the load balancer none for
  // the requests that did not need the store. A store every node shares does not take this one out of rotation.
  it('a shared store down: /healthz 503, /readyz 200 "degraded" naming it (the node answers 503 itself where it is needed)', async () => {
    const { checks } = app.container.health;
    const i = checks.findIndex((c) => c.name === 'queue');
    const saved = checks[i]!;
    (checks as Array<typeof saved>)[i] = { name: 'queue', shared: true, check: async () => { throw new Error('Redis failing over'); } };
    try {
      expect((await fetch(`${app.baseUrl}/healthz`)).status).toBe(503);
      const ready = await fetch(`${app.baseUrl}/readyz`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toMatchObject({ status: 'degraded', queue: 'unavailable: Redis failing over', database: 'ok' });
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
