import { execFile } from 'node:child_process';
import { connect } from 'node:net';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientErrorRefusal } from '../../src/http/envelope.js';
import { buildSystemServer } from '../../src/http/server.js';
import { drainOf } from '../../src/http/drain.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { isEnvelope, parseJson, rawRequest } from '../helpers/raw-http.js';

/**
 * Requests refused before routing (Node's HTTP parser, Fastify's router) and malformed multipart uploads:
 * each answer is a documented envelope (docs/api.md "Answers before routing", "Upload"), never a framework
 * body, an empty answer or a 500.
 */
const API = '/audio/api/v1/api-keys';
const execFileAsync = promisify(execFile);
const UPLOAD = `${API}/files/upload`;

let app: TestApp;
let port: number;
let key: string;
beforeAll(async () => {
  app = await startTestApp({ UPLOAD_MAX_BYTES: '100000' }, { workers: false });
  port = Number(new URL(app.baseUrl).port);
  ({ key } = await app.newKey());
});
afterAll(async () => app?.close());

async function raw(data: string) {
  const answer = await rawRequest(port, data);
  expect(answer, `no answer to ${JSON.stringify(data.slice(0, 80))}`).not.toBeNull();
  const json = parseJson(answer!.body) as { code: number; message: string };
  expect(isEnvelope(json), `not an envelope: ${answer!.body}`).toBe(true);
  return { status: answer!.status, headers: answer!.headers, json };
}

/**
 * Everything the server sends on one connection until it closes it (rawRequest reads only the first answer);
 * `halfClose`: the client ends its side after writing, as `printf ... | ncat` does.
 */
function untilClosed(data: string, opts: { halfClose: boolean }): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => (opts.halfClose ? socket.end(data) : socket.write(data)));
    let received = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (received += chunk));
    socket.on('close', () => resolve(received));
    socket.on('error', reject);
    socket.setTimeout(10_000, () => reject(new Error(`no close within 10 s; got: ${received.slice(0, 200)}`)));
  });
}

describe('answers before routing', () => {
  it.each([
    ['duplicate Content-Length', `POST ${API}/tts/task/get HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}`, /Duplicate Content-Length/],
    ['Content-Length with Transfer-Encoding', `POST ${API}/tts/task/get HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}`, /Transfer-Encoding/],
    ['invalid Content-Length', `POST ${API}/tts/task/get HTTP/1.1\r\nHost: x\r\nContent-Length: 1x\r\n\r\n{}`, /malformed HTTP/],
    ['a control character in a header name', 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-A\x01b: c\r\n\r\n', /header/i],
    ['a control character in a header value', 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: b\x7fc\r\n\r\n', /header/i],
    ['an unknown method token', 'FOO /healthz HTTP/1.1\r\nHost: x\r\n\r\n', /method/i],
    ['no request line at all', 'hello world\r\n\r\n', /malformed HTTP/],
    ['bad chunked encoding', `POST ${API}/tts/task/get HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n`, /chunk/i],
    ['an HTTP/2 preface', 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', /malformed HTTP/],
  ])('%s: 400, 100002 naming the problem, connection closed', async (_name, request, problem) => {
    const res = await raw(request);
    expect(res.status).toBe(400);
    expect(res.json.code).toBe(100002);
    expect(res.json.message).toMatch(/^Invalid parameters: request: malformed HTTP \(/);
    expect(res.json.message).toMatch(problem);
    expect(res.headers.connection).toBe('close');
  });

  it('a path that is not valid percent-encoding: 400, 100002', async () => {
    for (const path of [`${API}/%ff%fe`, '/assets/voices/%ff%fe', '/files/%ff%fe', '/docs/static/%ff', '/%']) {
      const res = await raw(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
      expect(res.status).toBe(400);
      expect(res.json).toEqual({ code: 100002, data: {}, message: 'Invalid parameters: path: not a valid URL (malformed percent-encoding)' });
    }
    // The same through fetch (an ordinary client).
    const res = await fetch(`${app.baseUrl}${API}/tts/task/%ff%fe`, { method: 'POST' });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { code: number }).code).toBe(100002);
  });

  it('headers over 16 KiB: 431, 100431', async () => {
    const res = await raw(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(res.status).toBe(431);
    expect(res.json.code).toBe(100431);
    expect(res.json.message).toMatch(/^Request header fields too large: /);
    // A URL over the limit is the same case.
    expect((await raw(`GET /${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`)).json.code).toBe(100431);
  });

  it('HTTP/1.1 without Host: 400, 100002 (HTTP/1.0 without Host is fine)', async () => {
    const res = await raw('GET /healthz HTTP/1.1\r\n\r\n');
    expect(res.status).toBe(400);
    expect(res.json).toEqual({ code: 100002, data: {}, message: 'Invalid parameters: header host: required (HTTP/1.1)' });
    const old = await rawRequest(port, `GET ${API}/nowhere HTTP/1.0\r\n\r\n`);
    expect(old?.status).toBe(404);
  });

  it('an Expect other than 100-continue: 417, 100002', async () => {
    const res = await raw('GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: something\r\n\r\n');
    expect(res.status).toBe(417);
    expect(res.json.code).toBe(100002);
  });

  it('methods no route takes, CONNECT, too-long parameters: 404, 100404', async () => {
    for (const method of ['DELETE', 'PUT', 'PATCH', 'PROPFIND', 'OPTIONS']) {
      const res = await raw(`${method} ${API}/tts/task/create HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n`);
      expect(res.status).toBe(404);
      expect(res.json).toEqual({ code: 100404, data: {}, message: `Not Found: ${method} ${API}/tts/task/create` });
    }
    const connectRes = await raw('CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
    expect(connectRes.status).toBe(404);
    expect(connectRes.json.code).toBe(100404);
    const long = await raw(`GET /assets/voices/${'1'.repeat(150)}.svg HTTP/1.1\r\nHost: x\r\n\r\n`);
    expect(long.status).toBe(404);
    expect(long.json.code).toBe(100404);
    // A voice asset nobody has names method and path too, as every other 404 (it said just "Not Found").
    const unknownVoice = await raw('GET /assets/voices/999999.svg HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(unknownVoice.status).toBe(404);
    expect(unknownVoice.json).toEqual({ code: 100404, data: {}, message: 'Not Found: GET /assets/voices/999999.svg' });
  });

  it('a path nobody serves is the 404 whatever its body (not a body refusal)', async () => {
    // The not-found handler parses a body like any route: a bad one answered 100002 before this was fixed.
    for (const [type, body] of [['image/png', 'ab'], ['garbage', 'ab'], ['application/json', '{x'], ['application/json', '']] as const) {
      const res = await raw(`PUT ${API}/nowhere HTTP/1.1\r\nHost: x\r\nContent-Type: ${type}\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
      expect(res.status, type).toBe(404);
      expect(res.json, type).toEqual({ code: 100404, data: {}, message: `Not Found: PUT ${API}/nowhere` });
    }
    const big = await fetch(`${app.baseUrl}${API}/nowhere`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: 'x'.repeat(9 * 1024 * 1024) });
    expect(big.status).toBe(404);
    expect(((await big.json()) as { code: number }).code).toBe(100404);
  });

  it('maps each parser error to its documented status and code', () => {
    const refusal = (code: string, reason?: string) => {
      const { status, error } = clientErrorRefusal(Object.assign(new Error('x'), { code, reason }));
      return [status, error.code, error.message];
    };
    expect(refusal('HPE_HEADER_OVERFLOW')).toEqual([431, 100431, expect.stringMatching(/^Request header fields too large: /)]);
    expect(refusal('ERR_HTTP_REQUEST_TIMEOUT')).toEqual([408, 100408, expect.stringMatching(/^Request timeout: /)]);
    expect(refusal('HPE_CHUNK_EXTENSIONS_OVERFLOW')).toEqual([413, 100413, expect.stringMatching(/^Payload too large: /)]);
    expect(refusal('HPE_INVALID_METHOD', 'Invalid method encountered')).toEqual([400, 100002, 'Invalid parameters: request: malformed HTTP (Invalid method encountered)']);
    // Never the client's bytes, never control characters.
    expect(refusal('HPE_SOMETHING_NEW', 'bad\u0000\u00ff')[2]).toBe('Invalid parameters: request: malformed HTTP (bad??)');
    expect(refusal('HPE_SOMETHING_NEW')[2]).toBe('Invalid parameters: request: malformed HTTP (HPE_SOMETHING_NEW)');
  });

  it('a worker node (system routes only) answers the same way', async () => {
    const { metrics, logger } = app.container.httpDeps();
    const server = await buildSystemServer({ metrics, logger, health: { role: 'worker', checks: [] } });
    await server.listen({ host: '127.0.0.1', port: 0 });
    const workerPort = (server.server.address() as { port: number }).port;
    try {
      for (const [request, status, code] of [
        ['GET /%ff%fe HTTP/1.1\r\nHost: x\r\n\r\n', 400, 100002],
        ['GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n', 400, 100002],
        [`GET /healthz HTTP/1.1\r\nHost: x\r\nX: ${'a'.repeat(20_000)}\r\n\r\n`, 431, 100431],
        ['GET /healthz HTTP/1.1\r\n\r\n', 400, 100002],
        ['POST /audio/api/v1/api-keys/tts/task/create HTTP/1.1\r\nHost: x\r\n\r\n', 404, 100404],
        // A body on a path it does not serve: the 404 envelope, not Fastify's own 400/415 body (seen from outside).
        ['POST /x HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 0\r\n\r\n', 404, 100404],
        ['POST /x HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 3\r\n\r\n{x}', 404, 100404],
        ['PUT /x HTTP/1.1\r\nHost: x\r\nContent-Type: garbage\r\nContent-Length: 2\r\n\r\nab', 404, 100404],
        ['POST /x HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data\r\nContent-Length: 2\r\n\r\nab', 404, 100404],
        ['POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nab', 404, 100404],
      ] as const) {
        const answer = await rawRequest(workerPort, request);
        expect(answer?.status, request.slice(0, 60)).toBe(status);
        expect((parseJson(answer!.body) as { code: number }).code).toBe(code);
      }
      expect((await rawRequest(workerPort, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'))?.status).toBe(200);
    } finally {
      await server.close();
    }
  });

  it('a body over the limit, or any body on a route nobody serves: every client still sending it reads the answer, not a reset', async () => {
    // Refused at 8 MB while the client still sends the rest: closing with unread input reset the connection,
    // and fetch reported EPIPE instead of the answer for about a quarter of such requests (seen from outside;
    // the /v1 routes, with their own error handler, and unknown methods had the same fault).
    // The client runs in a process of its own: on this test's event loop it never races the server.
    const client = `
      const [url, method, key] = process.argv.slice(1);
      const body = '{"text":"' + 'x'.repeat(9 * 1024 * 1024) + '"}';
      const answers = [];
      for (let i = 0; i < 20; i++) {
        try {
          const res = await fetch(url, { method, headers: { 'api-key': key, authorization: 'Bearer ' + key, 'content-type': 'application/json' }, body });
          const json = JSON.parse(await res.text());
          answers.push(res.status + ' ' + (json.code ?? json.error?.code));
        } catch (err) { answers.push(String(err) + ' ' + (err.cause?.code ?? '')); }
      }
      console.log(JSON.stringify(answers));`;
    for (const [method, path, answer, apiKey] of [
      ['POST', `${API}/tts/task/create`, '200 100413', key],
      ['PUT', `${API}/tts/task/create`, '404 100404', key],
      ['POST', '/v1/audio/speech', '413 payload_too_large', key],
      ['OPTIONS', '/v1/audio/speech', '404 not_found', key],
      // Refused before the body is read: the connection closes too, rather than reading the body to its end.
      ['POST', `${API}/tts/task/create`, '200 101002', 'sk_nope'],
    ] as const) {
      const { stdout } = await execFileAsync(process.execPath, ['--input-type=module', '-e', client, `${app.baseUrl}${path}`, method, apiKey]);
      expect(JSON.parse(stdout), `${method} ${path}`).toEqual(Array(20).fill(answer));
    }
  });

  it('a client that half-closes after its request (printf | ncat) still reads the answer', async () => {
    // Node's default aborts every request still in progress when the client's FIN arrives: no answer at all.
    const body = JSON.stringify({ voice_id: 1001, emotion: 1, speed: 1, language: 'en', text: 'Half closed.' });
    const create = await rawRequest(port, `POST ${API}/tts/task/create HTTP/1.1\r\nHost: x\r\napi-key: ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`, { endAfterWrite: true });
    expect(create?.status).toBe(200);
    const job = (parseJson(create!.body) as { code: number; data: { job_id: string } });
    expect(job.code).toBe(100000);
    const query = JSON.stringify({ global_id: job.data.job_id });
    for (const request of [
      `POST ${API}/tts/task/get HTTP/1.1\r\nHost: x\r\napi-key: ${key}\r\nContent-Type: application/json\r\nContent-Length: ${query.length}\r\n\r\n${query}`,
      'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n',
      `GET ${API}/tts/voices?language=en HTTP/1.1\r\nHost: x\r\napi-key: ${key}\r\n\r\n`,
    ]) {
      const answer = await rawRequest(port, request, { endAfterWrite: true });
      // The test app runs no workers, so /healthz says 503: an answer is what counts here.
      expect(answer?.status, request.slice(0, 50)).toBe(request.includes('/healthz') ? 503 : 200);
    }
  });

  it('answers every request pipelined ahead of the half-close, in order, then closes', async () => {
    const query = JSON.stringify({ global_id: 'no-such-task' });
    const requests = [
      `POST ${API}/tts/task/get HTTP/1.1\r\nHost: x\r\napi-key: ${key}\r\nContent-Type: application/json\r\nContent-Length: ${query.length}\r\n\r\n${query}`,
      `GET ${API}/tts/voices?language=en&page_size=1 HTTP/1.1\r\nHost: x\r\napi-key: ${key}\r\n\r\n`,
      'GET /no/such/path HTTP/1.1\r\nHost: x\r\n\r\n',
      'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n',
    ];
    const stream = await untilClosed(requests.join(''), { halfClose: true });
    expect(stream.match(/HTTP\/1\.1 \d{3}/g)).toEqual(['HTTP/1.1 200', 'HTTP/1.1 200', 'HTTP/1.1 404', 'HTTP/1.1 503']);
    expect(stream.match(/"code":\d+/g)).toEqual(['"code":101008', '"code":100000', '"code":100404']);
  });

  it('a malformed request pipelined behind valid ones is refused after their answers, in order, and leaves nothing counted in flight', async () => {
    const voices = await app.get(`${API}/tts/voices?language=en&page_size=1`, key);
    const create = JSON.stringify({ voice_id: voices.json.data.records[0].id, emotion: 0, speed: 1, language: 'en', text: 'Pipelined.' });
    const requests = [
      `POST ${API}/tts/task/create HTTP/1.1\r\nHost: x\r\napi-key: ${key}\r\nContent-Type: application/json\r\nContent-Length: ${create.length}\r\n\r\n${create}`,
      'GET /no/such/path HTTP/1.1\r\nHost: x\r\n\r\n',
      'BAD\x01REQUEST / HTTP/1.1\r\n\r\n',
    ];
    const stream = await untilClosed(requests.join(''), { halfClose: false });
    // Before, the refusal was written ahead of both: read as the create's answer, while the task was made (and charged).
    expect(stream.match(/HTTP\/1\.1 \d{3}/g)).toEqual(['HTTP/1.1 200', 'HTTP/1.1 404', 'HTTP/1.1 400']);
    expect(stream.match(/"code":\d+/g)).toEqual(['"code":100000', '"code":100404', '"code":100002']);
    expect(stream).toMatch(/"job_id":"[0-9a-f]{32}"/);
    await expect.poll(() => drainOf(app.http).inFlight).toBe(0);
  });

  it('a compressed request body is refused naming Content-Encoding, on JSON routes, uploads and /v1', async () => {
    const { gzipSync } = await import('node:zlib');
    const body = gzipSync(JSON.stringify({ global_id: 'x' }));
    const message = /^Invalid parameters: header content-encoding: compressed request bodies are not accepted \(gzip\); send the body uncompressed$/;
    const get = await fetch(`${app.baseUrl}${API}/tts/task/get`, { method: 'POST', headers: { 'api-key': key, 'content-type': 'application/json', 'content-encoding': 'gzip' }, body });
    const json = (await get.json()) as { code: number; message: string };
    expect(json.code).toBe(100002);
    expect(json.message).toMatch(message);
    const up = await fetch(`${app.baseUrl}${UPLOAD}`, { method: 'POST', headers: { 'api-key': key, 'content-type': 'multipart/form-data; boundary=b', 'content-encoding': 'gzip' }, body });
    expect(((await up.json()) as { message: string }).message).toMatch(message);
    const speech = await fetch(`${app.baseUrl}/v1/audio/speech`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-encoding': 'gzip' }, body });
    expect(speech.status).toBe(400);
    expect(((await speech.json()) as { error: { message: string } }).error.message).toMatch(/content-encoding/);
    // identity is no encoding at all.
    const plain = await fetch(`${app.baseUrl}${API}/tts/task/get`, { method: 'POST', headers: { 'api-key': key, 'content-type': 'application/json', 'content-encoding': 'identity' }, body: JSON.stringify({ global_id: 'x' }) });
    expect(((await plain.json()) as { code: number }).code).toBe(101008);
  });

  it('the server keeps serving after all of them', async () => {
    expect((await app.get(`${API}/tts/voices?page_size=1`, key)).json.code).toBe(100000);
  });
});

describe('malformed multipart on the upload route', () => {
  const B = 'XxBoundaryxX';
  const part = (name: string, filename?: string, data = 'abc') =>
    `--${B}\r\nContent-Disposition: form-data; name="${name}"${filename ? `; filename="${filename}"` : ''}\r\n\r\n${data}\r\n`;
  async function upload(body: string, contentType = `multipart/form-data; boundary=${B}`) {
    const res = await fetch(`${app.baseUrl}${UPLOAD}`, { method: 'POST', headers: { 'api-key': key, 'content-type': contentType }, body });
    return { status: res.status, json: (await res.json()) as { code: number; data: object; message: string } };
  }

  it.each([
    ['no boundary', 'hello', 'multipart/form-data', /boundary missing or invalid/],
    ['an empty boundary', 'hello', 'multipart/form-data; boundary=', /boundary missing or invalid|truncated/],
    ['a boundary over 70 characters', 'hello', `multipart/form-data; boundary=${'b'.repeat(300)}`, /boundary missing or invalid/],
    ['garbage instead of parts', 'hello, not a form', undefined, /truncated/],
    ['a file without its closing boundary', part('file', 'a.wav'), undefined, /truncated/],
    ['a body cut inside the file', `--${B}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n\r\nabc`, undefined, /truncated/],
    ['only fields', part('name', undefined, 'x') + `--${B}--\r\n`, undefined, /file: required/],
    ['an empty body', '', undefined, /file: required/],
    ['too many fields', Array.from({ length: 40 }, (_, i) => part(`f${i}`)).join('') + part('file', 'a.wav') + `--${B}--\r\n`, undefined, /too many fields/],
    ['a file part named __proto__', part('__proto__', 'a.wav') + `--${B}--\r\n`, undefined, /not allowed|file: required/],
    ['JSON instead of a form', '{"file":"x"}', 'application/json', /expected multipart\/form-data/],
  ])('%s: 100002 naming the problem', async (_name, body, contentType, problem) => {
    const res = await upload(body, contentType);
    expect(res.status).toBe(200);
    expect(res.json.code).toBe(100002);
    expect(res.json.data).toEqual({});
    expect(res.json.message).toMatch(problem);
  });

  it('a file over the limit inside a malformed body: 100413', async () => {
    const res = await upload(`--${B}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n\r\n${'a'.repeat(150_000)}`);
    expect(res.json.code).toBe(100413);
  });

  it('a body declared far over the limit (5 GB) is refused at once, before it is read, and the connection closes', async () => {
    const head = `POST ${UPLOAD} HTTP/1.1\r\nHost: x\r\napi-key: ${key}\r\nContent-Type: multipart/form-data; boundary=${B}\r\nContent-Length: 5000000000\r\n\r\n`;
    const started = Date.now();
    const answer = await rawRequest(port, head + part('file', 'huge.wav', 'x'.repeat(1000)), { timeoutMs: 5000 });
    expect(answer?.status).toBe(200);
    expect(answer?.headers.connection).toBe('close');
    expect(parseJson(answer!.body)).toEqual({ code: 100413, data: {}, message: 'Payload too large: the request declares 5000000000 bytes; an upload may be at most 100000 bytes (UPLOAD_MAX_BYTES)' });
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('an answer sent before the body has all been read leaves the connection usable (the rest is read and dropped)', async () => {
    // Found by the fuzz test: skipped parts, then an epilogue after the closing boundary. The parser stopped
    // reading there (its buffer full, waiting for a drain that never came) after the answer was sent, so the
    // connection waited forever: the next request on it was never answered, the socket never closed.
    const long = `X-Long: ${'h'.repeat(20_000)}`;
    const body =
      `--${B}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n\r\nRIFF\r\n` +
      `--${B}\r\nContent-Disposition: form-data; name="note"\r\n${long}\r\n\r\nx\r\n` +
      `--${B}\r\nContent-Disposition: form-data; name="second"; filename="b.wav"\r\n${long}\r\n\r\ny\r\n` +
      `--${B}\r\nContent-Disposition: form-data; name="third"; filename="c.wav"\r\n\r\n${'R'.repeat(57_000)}\r\n` +
      `--${B}--\r\n${'E'.repeat(200_000)}`;
    const socket = connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (d: Buffer) => (received += d.toString('latin1')));
    const answers = () => received.match(/HTTP\/1\.1 \d{3}/g) ?? [];
    try {
      socket.write(
        `POST ${UPLOAD} HTTP/1.1\r\nHost: x\r\napi-key: ${key}\r\ncontent-type: multipart/form-data; boundary=${B}\r\ncontent-length: ${body.length}\r\n\r\n${body}` +
          `GET ${API}/tts/voices?page_size=1 HTTP/1.1\r\nHost: x\r\napi-key: ${key}\r\n\r\n`,
      );
      for (let i = 0; i < 100 && answers().length < 2; i++) await new Promise((r) => setTimeout(r, 50));
      expect(received).toContain('"code":100000');
      expect(answers()).toEqual(['HTTP/1.1 200', 'HTTP/1.1 200']);
    } finally {
      socket.destroy();
    }
  });

  it('a body cut short by the client: an envelope, never 500', async () => {
    const body = `--${B}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n\r\nabc`;
    const answer = await rawRequest(
      port,
      `POST ${UPLOAD} HTTP/1.1\r\nHost: x\r\napi-key: ${key}\r\nContent-Type: multipart/form-data; boundary=${B}\r\nContent-Length: ${body.length + 500}\r\n\r\n${body}`,
      { timeoutMs: 1500 },
    );
    // The server waits for the rest of the body: no answer yet (the client gives up), and nothing breaks.
    expect(answer === null || (answer.status < 500 && isEnvelope(parseJson(answer.body)))).toBe(true);
    const good = await upload(part('file', 'ok.wav', 'RIFF') + `--${B}--\r\n`);
    expect(good.json.code).toBe(100000);
  });
});
