import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { buildHttpServer } from '../../src/http/server.js';
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
