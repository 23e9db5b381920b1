import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';

/**
 * Slow clients (slowloris): headers, JSON bodies and uploads each have a deadline (HEADERS_TIMEOUT_SECONDS,
 * REQUEST_TIMEOUT_SECONDS, UPLOAD_TIMEOUT_SECONDS); a client trickling a byte at a time past it is answered the
 * 408 envelope and its connection closed, even with a valid key. Short timeouts here; defaults in docs/api.md.
 */
const API = '/audio/api/v1/api-keys';

let app: TestApp;
let port: number;
let key: string;
beforeAll(async () => {
  app = await startTestApp({ HEADERS_TIMEOUT_SECONDS: '1', REQUEST_TIMEOUT_SECONDS: '1', UPLOAD_TIMEOUT_SECONDS: '3' }, { workers: false });
  port = Number(new URL(app.baseUrl).port);
  ({ key } = await app.newKey());
});
afterAll(async () => app?.close());

/**
 * Sends `head` at once, then one byte of `trickle` every `everyMs` (all of it with `whole`) until the server
 * closes; what it answered and when.
 */
function trickle(head: string, trickleBytes: string, everyMs: number, giveUpMs = 10_000, to = { port: 0, whole: false }): Promise<{ answer: string; closedAfterMs: number }> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket: Socket = connect(to.port || port, '127.0.0.1');
    let answer = '';
    let i = 0;
    let timer: NodeJS.Timeout | undefined;
    const giveUp = setTimeout(() => {
      socket.destroy();
      reject(new Error(`still open after ${giveUpMs} ms; answered so far: ${answer}`));
    }, giveUpMs);
    socket.on('data', (d) => (answer += d.toString('latin1')));
    socket.on('error', () => {}); // a reset after the answer is a close too
    socket.on('close', () => {
      clearInterval(timer);
      clearTimeout(giveUp);
      resolve({ answer, closedAfterMs: Date.now() - started });
    });
    socket.on('connect', () => {
      socket.write(head);
      timer = setInterval(() => {
        if (socket.destroyed || !socket.writable) return;
        socket.write(to.whole ? trickleBytes : trickleBytes[i++ % trickleBytes.length]!);
      }, everyMs);
    });
  });
}

function envelopeOf(answer: string): { status: number; json: { code: number; message: string }; headers: string } {
  const [head, body = ''] = answer.split('\r\n\r\n');
  return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head ?? '')?.[1]), json: JSON.parse(body), headers: head!.toLowerCase() };
}

describe('slow clients are cut off', () => {
  it('a JSON body trickled a byte at a time with a valid key: 408 envelope, connection closed', async () => {
    const head = `POST ${API}/tts/task/get HTTP/1.1\r\nHost: x\r\napi-key: ${key}\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n`;
    const { answer, closedAfterMs } = await trickle(head, '{"global_id":"', 200);
    const res = envelopeOf(answer);
    expect(res.status).toBe(408);
    expect(res.json.code).toBe(100408);
    expect(res.json.message).toBe('Request timeout: the body did not arrive within 1 s');
    expect(res.headers).toContain('connection: close');
    expect(closedAfterMs).toBeLessThan(4000);
  });

  it('headers trickled a byte at a time: 408 envelope, connection closed', async () => {
    const { answer, closedAfterMs } = await trickle(`POST ${API}/tts/task/get HTTP/1.1\r\nHost: x\r\n`, 'X-Slow: aaaaaaaaaaaaaaaaaaaa', 200);
    const res = envelopeOf(answer);
    expect(res.status).toBe(408);
    expect(res.json.code).toBe(100408);
    expect(closedAfterMs).toBeLessThan(4000);
  });

  it('an upload trickled past UPLOAD_TIMEOUT_SECONDS (not the JSON deadline): 408 envelope, connection closed', async () => {
    const boundary = 'xyz';
    const head =
      `POST ${API}/files/upload HTTP/1.1\r\nHost: x\r\napi-key: ${key}\r\ncontent-type: multipart/form-data; boundary=${boundary}\r\ncontent-length: 100000\r\n\r\n` +
      `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="a.wav"\r\ncontent-type: audio/wav\r\n\r\n`;
    const { answer, closedAfterMs } = await trickle(head, 'RIFF', 200);
    expect(closedAfterMs).toBeGreaterThanOrEqual(2500); // uploads get longer than JSON bodies
    expect(closedAfterMs).toBeLessThan(8000);
    const res = envelopeOf(answer);
    expect(res.status).toBe(408);
    expect(res.json.code).toBe(100408);
  });

  it('a prompt client is unaffected, also on a kept-alive connection', async () => {
    for (let i = 0; i < 3; i++) {
      expect((await app.post(`${API}/tts/task/get`, { global_id: 'nope' }, key)).json.code).toBe(101008);
      await new Promise((r) => setTimeout(r, 600)); // across the checking interval; idle keep-alive is not a slow request
    }
  });
});

describe('uploads have a minimum transfer rate (UPLOAD_MIN_BYTES_PER_SECOND over each UPLOAD_RATE_WINDOW_SECONDS)', () => {
  let slow: TestApp;
  let slowPort: number;
  let slowKey: string;
  beforeAll(async () => {
    slow = await startTestApp({ UPLOAD_TIMEOUT_SECONDS: '60', UPLOAD_MIN_BYTES_PER_SECOND: '100', UPLOAD_RATE_WINDOW_SECONDS: '1' }, { workers: false });
    slowPort = Number(new URL(slow.baseUrl).port);
    ({ key: slowKey } = await slow.newKey());
  });
  afterAll(async () => slow?.close());

  const uploadHead = (k: string) =>
    `POST ${API}/files/upload HTTP/1.1\r\nHost: x\r\napi-key: ${k}\r\ncontent-type: multipart/form-data; boundary=xyz\r\ncontent-length: 1000000\r\n\r\n` +
    `--xyz\r\ncontent-disposition: form-data; name="file"; filename="a.wav"\r\ncontent-type: audio/wav\r\n\r\n`;

  it('an upload dribbling 5 bytes/s is cut off after a window, long before UPLOAD_TIMEOUT_SECONDS: 408 naming the floor', async () => {
    const { answer, closedAfterMs } = await trickle(uploadHead(slowKey), 'RIFF', 200, 10_000, { port: slowPort, whole: false });
    expect(closedAfterMs).toBeLessThan(5000);
    const res = envelopeOf(answer);
    expect(res.status).toBe(408);
    expect(res.json).toMatchObject({ code: 100408, message: 'Request timeout: the upload arrived slower than 100 bytes/s over 1 s (UPLOAD_MIN_BYTES_PER_SECOND)' });
    expect(res.headers).toContain('connection: close');
  });

  it('an upload arriving above the floor keeps going', async () => {
    // 1,000 bytes/s (200 every 200 ms) for longer than three windows: still open when the client gives up.
    await expect(trickle(uploadHead(slowKey), 'x'.repeat(200), 200, 3500, { port: slowPort, whole: true }).catch((e: Error) => e.message)).resolves.toMatch(/^still open after 3500 ms/);
  });
});
