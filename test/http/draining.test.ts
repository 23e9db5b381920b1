import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { buildHttpServer } from '../../src/http/server.js';
import { drainOf } from '../../src/http/drain.js';
import { startTestApp } from '../helpers/app.js';

function rawRequest(key: string, body: string): string {
  return `POST /audio/api/v1/api-keys/tts/task/get HTTP/1.1\r\nHost: x\r\napi-key: ${key}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

describe('graceful shutdown', () => {
  it("a request arriving on an open connection while the server drains gets the 503 envelope, not fastify's own body", async () => {
    const app = await startTestApp({}, { workers: false });
    const { key } = await app.newKey();
    const http = await buildHttpServer(app.container.httpDeps());
    await http.listen({ host: '127.0.0.1', port: 0 });
    const port = (http.server.address() as net.AddressInfo).port;
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (d) => (received += d.toString()));
    await new Promise((r) => socket.once('connect', r));
    // First request: headers now, body later, so the connection is busy when the drain starts.
    const body = '{"global_id":"x"}';
    const first = rawRequest(key, body);
    socket.write(first.slice(0, first.length - body.length));
    await new Promise((r) => setTimeout(r, 100));
    const closing = http.close();
    await new Promise((r) => setTimeout(r, 100));
    socket.write(body + rawRequest(key, body));
    await closing;
    await new Promise((r) => setTimeout(r, 100));
    socket.destroy();
    const responses = received.split(/(?=HTTP\/1\.1 )/);
    expect(responses[0]).toMatch(/^HTTP\/1\.1 200/);
    expect(responses[0]).toContain('"code":101008');
    expect(responses[1]).toMatch(/^HTTP\/1\.1 503/);
    expect(responses[1]).toContain('{"code":100503,"data":{},"message":"Service is shutting down, try again shortly"}');
    await app.close();
  });
});

describe('the drain before the listener closes (SIGTERM)', () => {
  it('new connections get the 503 envelope with Connection: close and Retry-After; probes still answer; settled() waits for admitted requests', async () => {
    const app = await startTestApp({}, { workers: false });
    const { key } = await app.newKey();
    const http = await buildHttpServer(app.container.httpDeps());
    await http.listen({ host: '127.0.0.1', port: 0 });
    const port = (http.server.address() as net.AddressInfo).port;
    const base = `http://127.0.0.1:${port}`;
    // A request admitted before the drain: headers sent, body still to come.
    const socket = net.connect(port, '127.0.0.1');
    try {
      let received = '';
      socket.on('data', (d) => (received += d.toString()));
      await new Promise((r) => socket.once('connect', r));
      const body = '{"global_id":"x"}';
      const first = rawRequest(key, body);
      socket.write(first.slice(0, first.length - body.length));
      await new Promise((r) => setTimeout(r, 100));

      const drain = drainOf(http);
      drain.begin();
      expect(drain.inFlight).toBe(1);
      const settled = drain.settled(5000);

      const refused = await fetch(`${base}/audio/api/v1/api-keys/tts/task/get`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'api-key': key },
        body,
      });
      expect(refused.status).toBe(503);
      expect(refused.headers.get('connection')).toBe('close');
      expect(refused.headers.get('retry-after')).toBe('5');
      expect(await refused.json()).toEqual({ code: 100503, data: {}, message: 'Service is shutting down, try again shortly' });
      const unknown = await fetch(`${base}/nowhere`);
      expect(unknown.status).toBe(503);
      const ready = await fetch(`${base}/readyz`);
      expect(ready.status).toBe(503);
      expect(await ready.json()).toMatchObject({ status: 'draining' });
      // /healthz still reports (no workers in this app, so 503 naming them: the check ran, not the refusal).
      expect(await (await fetch(`${base}/healthz`)).json()).toMatchObject({ database: 'ok' });
      expect((await fetch(`${base}/metrics`)).status).toBe(200);

      // The admitted request still completes normally, and only then is the drain settled.
      let done = false;
      void settled.then(() => (done = true));
      await new Promise((r) => setTimeout(r, 100));
      expect(done).toBe(false);
      socket.write(body);
      expect(await settled).toBe(true);
      await new Promise((r) => setTimeout(r, 50));
      expect(received).toMatch(/^HTTP\/1\.1 200/);
      expect(received).toContain('"code":101008');
    } finally {
      socket.destroy();
      await http.close();
      await app.close();
    }
  });
});
