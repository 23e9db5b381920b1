import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drainOf } from '../../src/http/drain.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

/**
 * A request refused before its body has arrived (no key, a bad key, a bad query) is answered with Connection: close
 * and its connection closed once the body has come or REFUSED_LINGER_MS passed: before, Node read and dropped the
 * whole declared body to keep the connection, so a client without a valid key could make the server read any amount
 * (200 MiB seen from outside). And a request pipelined behind a refused one counts as ended when its connection goes.
 */
const API = '/audio/api/v1/api-keys';
let app: TestApp;
let key: string;
let port: number;
beforeAll(async () => {
  app = await startTestApp({ UPLOAD_MAX_BYTES: '20000000', ENHANCE_MAX_BYTES: '65536' }, { workers: false });
  ({ key } = await app.newKey());
  port = Number(new URL(app.baseUrl).port);
});
afterAll(async () => app?.close());

/** Writes `head` and a first part of the body, then keeps sending a little more every 100 ms, as a large upload would. */
function sendAndWatch(head: string, first: Buffer, opts: { then?: Buffer } = {}): Promise<{ answer: string; closedAfterMs: number | null }> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    const started = Date.now();
    const more = setInterval(() => socket.writable && socket.write(Buffer.alloc(16 * 1024, 65)), 100);
    const give = setTimeout(() => finish(null), 8000);
    const finish = (closedAfterMs: number | null) => {
      clearInterval(more);
      clearTimeout(give);
      socket.destroy();
      resolve({ answer, closedAfterMs });
    };
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => finish(Date.now() - started));
    socket.write(Buffer.concat([Buffer.from(head, 'latin1'), first, opts.then ?? Buffer.alloc(0)]));
  });
}

const uploadHead = (query: string, apiKey: string | null, length: number) =>
  `POST ${API}/files/upload${query} HTTP/1.1\r\nHost: x\r\n${apiKey ? `api-key: ${apiKey}\r\n` : ''}Content-Type: multipart/form-data; boundary=XB\r\nContent-Length: ${length}\r\n\r\n`;

describe('refused before the body', () => {
  it.each([
    ['no key', uploadHead('', null, 200 * 1024 * 1024), 101002],
    ['a bad key', uploadHead('', 'sk_nope', 200 * 1024 * 1024), 101002],
    ['a bad kind', uploadHead('?kind=bogus', 'KEY', 200 * 1024 * 1024), 100002],
    ['a create with a bad key', `POST ${API}/tts/task/create HTTP/1.1\r\nHost: x\r\napi-key: sk_nope\r\nContent-Type: application/json\r\nContent-Length: 104857600\r\n\r\n`, 101002],
  ])('%s: answered, then the connection closes instead of reading the declared body', async (_what, head, code) => {
    const { answer, closedAfterMs } = await sendAndWatch(head.replace('KEY', key), Buffer.alloc(4096, 65));
    expect(answer).toMatch(/^HTTP\/1\.1 (200|401)/);
    expect(answer).toMatch(/connection: close/i);
    expect(answer).toContain(`"code":${code}`);
    expect(closedAfterMs).not.toBeNull();
    expect(closedAfterMs!).toBeLessThan(5000);
  });

  it('/v1/audio/speech with a bad key: its own error body, then the connection closes too', async () => {
    const head = `POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk_nope\r\nContent-Type: application/json\r\nContent-Length: 104857600\r\n\r\n`;
    const { answer, closedAfterMs } = await sendAndWatch(head, Buffer.alloc(4096, 65));
    // 401, or 429 once this client's invalid keys are slowed (the tests above sent some).
    expect(answer).toMatch(/^HTTP\/1\.1 (401|429)/);
    expect(answer).toMatch(/connection: close/i);
    expect(closedAfterMs).not.toBeNull();
    expect(closedAfterMs!).toBeLessThan(5000);
  });

  it('a request pipelined behind a refused upload is not left running: the drain finds none', async () => {
    const body = Buffer.concat([Buffer.from('--XB\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n\r\n'), Buffer.alloc(100_000, 1), Buffer.from('\r\n--XB--\r\n')]);
    const balance = Buffer.from(`GET ${API}/account/balance HTTP/1.1\r\nHost: x\r\napi-key: ${key}\r\n\r\n`);
    for (const query of ['?kind=enhance', '?kind=bogus', '']) {
      const { answer, closedAfterMs } = await sendAndWatch(uploadHead(query, key, body.length), body, { then: balance });
      expect(answer).toMatch(/^HTTP\/1\.1 200/);
      expect(closedAfterMs).not.toBeNull();
    }
    const drain = drainOf(app.http);
    for (let i = 0; i < 50 && drain.inFlight > 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(drain.inFlight).toBe(0);
  });
});

describe('the upload kind', () => {
  it('given twice is refused as given twice, not as an unknown kind', async () => {
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(10)]), 'a.wav');
    const res = await fetch(`${app.baseUrl}${API}/files/upload?kind=enhance&kind=enhance`, { method: 'POST', headers: { 'api-key': key }, body: form });
    expect(await res.json()).toEqual({ code: 100002, data: {}, message: 'Invalid parameters: kind: given more than once: send one kind' });
  });
});
