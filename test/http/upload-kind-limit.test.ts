import { execFile } from 'node:child_process';
import { open } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENHANCE_OVER_LIMIT_HINT } from '../../src/kinds/enhance/contract.js';
import { CLIENT_EXIT } from '../../src/cli/client.js';
import { Soundry } from '../../src/sdk/index.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { parseJson, rawRequest } from '../helpers/raw-http.js';

/**
 * ENHANCE_MAX_BYTES said before the bytes are sent (found from outside: `soundry enhance big.wav` uploaded 300 MB, then
 * the task failed on the 10 MB limit): an upload naming `?kind=enhance` is held to it, and a create whose input is an
 * own upload over it is refused at once. A 64 KiB limit keeps the files small.
 */
const API = '/audio/api/v1/api-keys';
const UPLOAD = `${API}/files/upload`;
const LIMIT = 65_536;
const B = 'XxBoundaryxX';
const run = promisify(execFile);
const root = new URL('../..', import.meta.url).pathname;

let app: TestApp;
let key: string;
let port: number;
/** Someone else's file server, on 127.0.0.1 (ALLOW_PRIVATE_URLS=1): its files are sized only by the worker's download. */
let site: Server;
let siteUrl: string;
beforeAll(async () => {
  app = await startTestApp({ ENHANCE_MAX_BYTES: String(LIMIT), ALLOW_PRIVATE_URLS: '1' });
  ({ key } = await app.newKey({ credits: 100 }));
  port = Number(new URL(app.baseUrl).port);
  site = createServer((_req, res) => res.writeHead(200, { 'content-type': 'audio/wav' }).end(Buffer.alloc(3 * LIMIT)));
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
  siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}/big.wav`;
});
afterAll(async () => {
  site?.close();
  await app?.close();
});

const tooLarge = (found: string) => `Payload too large: ${found}; enhance input files may be at most ${LIMIT} bytes (ENHANCE_MAX_BYTES); ${ENHANCE_OVER_LIMIT_HINT}`;

/** Removes every upload and answers how many there were (store-agnostic, as test/platform/upload-limit.test.ts). */
const clearUploads = () => app.container.blobs.deleteOlderThan('uploads', Date.now() + 86_400_000);

async function upload(bytes: number, query = '') {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(bytes)]), 'take.wav');
  const res = await fetch(`${app.baseUrl}${UPLOAD}${query}`, { method: 'POST', headers: { 'api-key': key }, body: form });
  return (await res.json()) as { code: number; data: { url?: string; size?: number }; message: string };
}

/** A sparse file: `bytes` long, no disk used; only what a client reads of it is ever read. */
async function sparseFile(name: string, bytes: number): Promise<string> {
  const path = join(app.dataDir, name);
  const handle = await open(path, 'w');
  await handle.truncate(bytes);
  await handle.close();
  return path;
}

describe('upload with ?kind=enhance', () => {
  it('a body declared over ENHANCE_MAX_BYTES is refused before it is read, naming the limit, its setting and what to send', async () => {
    await clearUploads();
    const head = `POST ${UPLOAD}?kind=enhance HTTP/1.1\r\nHost: x\r\napi-key: ${key}\r\nContent-Type: multipart/form-data; boundary=${B}\r\nContent-Length: 5000000\r\n\r\n`;
    const started = Date.now();
    // 1 KB of the announced 5 MB: the answer comes without the rest.
    const answer = await rawRequest(port, `${head}--${B}\r\nContent-Disposition: form-data; name="file"; filename="big.wav"\r\n\r\n${'x'.repeat(1000)}`, { timeoutMs: 5000 });
    expect(answer?.status).toBe(200);
    expect(answer?.headers.connection).toBe('close');
    expect(parseJson(answer!.body)).toEqual({ code: 100413, data: {}, message: tooLarge('the request declares 5000000 bytes') });
    expect(Date.now() - started).toBeLessThan(2000);
    expect(await clearUploads()).toBe(0);
  });

  it('a chunked body (no length) is cut once the file passes the limit: 100413, connection closed, nothing stored', async () => {
    await clearUploads();
    const head = `POST ${UPLOAD}?kind=enhance HTTP/1.1\r\nHost: x\r\napi-key: ${key}\r\nContent-Type: multipart/form-data; boundary=${B}\r\nTransfer-Encoding: chunked\r\n\r\n`;
    const chunk = (data: string) => `${Buffer.byteLength(data).toString(16)}\r\n${data}\r\n`;
    // Twice the limit and no last chunk: the server must answer from what it has, not wait for the end.
    const body = chunk(`--${B}\r\nContent-Disposition: form-data; name="file"; filename="big.wav"\r\n\r\n`) + Array.from({ length: 8 }, () => chunk('y'.repeat(LIMIT / 4))).join('');
    const answer = await rawRequest(port, head + body, { timeoutMs: 5000 });
    expect(answer?.headers.connection).toBe('close');
    expect(parseJson(answer!.body)).toEqual({ code: 100413, data: {}, message: tooLarge('the file exceeds the limit') });
    expect(await clearUploads()).toBe(0);
  });

  it('a file a little over the limit with an honest length is cut while it streams; one under it is stored', async () => {
    await clearUploads();
    expect(await upload(LIMIT + 1, '?kind=enhance')).toEqual({ code: 100413, data: {}, message: tooLarge('the file exceeds the limit') });
    const ok = await upload(LIMIT, '?kind=enhance');
    expect(ok.code).toBe(100000);
    expect(ok.data.size).toBe(LIMIT);
    expect(await clearUploads()).toBe(1);
  });

  it('a kind without a lower limit, or none, takes up to UPLOAD_MAX_BYTES', async () => {
    for (const query of ['', '?kind=separation', '?kind=tts']) expect((await upload(3 * LIMIT, query)).data.size).toBe(3 * LIMIT);
  });

  it('an unknown kind is 100002 naming the accepted values', async () => {
    const res = await upload(10, '?kind=music');
    expect(res.code).toBe(100002);
    expect(res.message).toBe('Invalid parameters: kind: Invalid option: expected one of "separation"|"tts"|"enhance"|"podcast_script"|"podcast_audio"');
  });
});

describe('enhance create with an own upload over ENHANCE_MAX_BYTES', () => {
  const enhanceTasks = async () => (await app.container.tasks.list({ limit: 10_000 })).filter((t) => t.kind === 'enhance').length;
  const balance = async (k: string) => (await app.get(`${API}/account/balance`, k)).json.data;
  const create = (inputurl: string, k: string) => app.post(`${API}/enhance/task/create`, { inputurl, enhance_type: { normalize: true } }, k);

  it('is refused at once (uploaded without kind): 100413, no task, nothing charged or held', async () => {
    const { key: own } = await app.newKey({ credits: 50 });
    const uploaded = await upload(3 * LIMIT);
    expect(uploaded.code).toBe(100000);
    const [tasks, funds] = [await enhanceTasks(), await balance(own)];
    const res = await create(uploaded.data.url!, own);
    expect(res.json).toEqual({ code: 100413, data: {}, message: tooLarge(`the inputurl's file is ${3 * LIMIT} bytes`) });
    expect(await enhanceTasks()).toBe(tasks);
    expect(await balance(own)).toEqual(funds);
  });

  it('another server\'s file is created and fails in the worker, with the same words as the refusals above', async () => {
    const created = await create(siteUrl, key);
    expect(created.json.code).toBe(100000);
    const done = await app.waitTask(`${API}/enhance/task/get`, 'job_id', created.json.data.job_id, key);
    expect(done.data.status).toBe('failed');
    expect(done.data.error.startsWith(`The URL could not be fetched: The file is larger than the allowed ${LIMIT} bytes; `)).toBe(true);
    expect(done.data.error.endsWith(`; ${ENHANCE_OVER_LIMIT_HINT}`)).toBe(true);
  });

  it('one under the limit, and an own link whose file is gone, are created (the worker reports what is wrong)', async () => {
    const small = await upload(LIMIT);
    expect((await create(small.data.url!, key)).json.code).toBe(100000);
    const gone = await app.container.urls.url('uploads/0123456789abcdef0123456789abcdef/gone.wav', 600);
    expect((await create(gone, key)).json.code).toBe(100000);
  });
});

describe('the client names the kind', () => {
  // 64 MiB, far over the limit plus the 2 MiB a multipart body may add: refused from its declared length.
  const BIG = 64 * 1024 * 1024;

  it('the SDK\'s enhance.run is refused before the file is sent, with the server\'s message', async () => {
    await clearUploads();
    const big = await sparseFile('big-sdk.wav', BIG);
    let sent = 0;
    const client = new Soundry({ baseUrl: app.baseUrl, apiKey: key });
    const err = await client.enhance.run(big, { output: join(app.dataDir, 'never.wav'), onProgress: (e) => e.phase === 'upload' && (sent = Math.max(sent, e.done)) }).catch((e: unknown) => e);
    expect(err).toMatchObject({ kind: 'api', code: 100413, task: null });
    // The file and the multipart framing around it.
    const declared = Number(/declares (\d+) bytes/.exec((err as Error).message)?.[1]);
    expect(declared - BIG).toBeGreaterThan(0);
    expect(declared - BIG).toBeLessThan(1024);
    expect((err as Error).message).toBe(`upload: ${tooLarge(`the request declares ${declared} bytes`)} (code 100413)`);
    // Whatever the socket buffers took before the answer came, not the file.
    expect(sent).toBeLessThan(BIG / 2);
    expect(await clearUploads()).toBe(0);
  });

  it('`soundry enhance big.wav` exits as refused (3) with the server\'s message, without sending the file', async () => {
    const big = await sparseFile('big-cli.wav', BIG);
    const started = Date.now();
    const failed = await run(process.execPath, [join(root, 'bin/soundry.js'), 'enhance', big], {
      cwd: app.dataDir,
      env: { ...process.env, SOUNDRY_URL: app.baseUrl, SOUNDRY_API_KEY: key, LOG_LEVEL: 'silent' },
    }).catch((e: { code: number; stderr: string }) => e);
    expect('code' in failed && failed.code).toBe(CLIENT_EXIT.refused);
    expect('stderr' in failed && failed.stderr).toContain(`enhance input files may be at most ${LIMIT} bytes (ENHANCE_MAX_BYTES); send a compressed format`);
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(await clearUploads()).toBe(0);
  }, 30_000);
});

describe('a link of this server that would not be honoured', () => {
  const tasksOf = async () => (await app.container.tasks.list({ limit: 10_000 })).length;
  const refused = (what: string) => `Invalid parameters: inputurl: is a file link of this server that ${what}; upload the file again for a new link`;

  it('expired, or changed, is refused at create (separation and enhancement): 100002 naming inputurl, no task', async () => {
    const uploaded = await upload(1000);
    const key1 = 'uploads/0123456789abcdef0123456789abcdef/take.wav';
    const expiring = await app.container.urls.url(key1, 1);
    // The file's name changed in the link: its signature no longer matches.
    const changed = uploaded.data.url!.replace('take.wav', 'tak3.wav');
    await new Promise((r) => setTimeout(r, 2100));
    const before = await tasksOf();
    for (const [path, body] of [
      [`${API}/separation/task/create`, (inputurl: string) => ({ inputurl, model_type: 501 })],
      [`${API}/enhance/task/create`, (inputurl: string) => ({ inputurl, enhance_type: { normalize: true } })],
    ] as const) {
      expect((await app.post(path, body(expiring), key)).json).toEqual({ code: 100002, data: {}, message: refused('has expired') });
      expect((await app.post(path, body(changed), key)).json).toEqual({ code: 100002, data: {}, message: refused('is not valid (changed or cut short)') });
    }
    expect(await tasksOf()).toBe(before);
  });
});
