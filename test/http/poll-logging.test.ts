import { mkdtemp, rm } from 'node:fs/promises';
import { Writable } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { buildContainer } from '../../src/app/container.js';
import { loadConfig } from '../../src/config/config.js';
import { buildHttpServer, withoutSignature } from '../../src/http/server.js';
import { issueApiKey } from '../../src/services/auth.js';
import { freePort } from '../helpers/app.js';

const API = '/audio/api/v1/api-keys';

/** A real server whose log lines are kept; one create and one poll of it, at the given LOG_LEVEL. */
async function logsOfCreateAndPoll(level: 'info' | 'debug'): Promise<Array<{ msg: string; url?: string; level: number }>> {
  const dataDir = await mkdtemp(join(tmpdir(), 'soundry-polllog-'));
  const lines: string[] = [];
  const sink = new Writable({ write: (chunk, _enc, done) => (lines.push(...String(chunk).trim().split('\n')), done()) });
  const port = await freePort();
  const config = loadConfig({ DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: level });
  const logger = pino({ level }, sink);
  const container = await buildContainer(config, logger);
  const app = await buildHttpServer(container.httpDeps());
  await app.listen({ host: '127.0.0.1', port });
  try {
    const { apiKey } = await issueApiKey(container.accounts, { credits: 100, rateLimit: null, concurrency: null });
    const headers = { 'content-type': 'application/json', 'api-key': apiKey };
    const base = `http://127.0.0.1:${port}${API}`;
    const voices = (await (await fetch(`${base}/tts/voices?language=en`, { headers })).json()) as any;
    const body = JSON.stringify({ voice_id: voices.data.records[0].id, emotion: 0, speed: 1, language: 'en', text: 'Hello there.' });
    const created = (await (await fetch(`${base}/tts/task/create`, { method: 'POST', headers, body })).json()) as any;
    const polled = (await (await fetch(`${base}/tts/task/get`, { method: 'POST', headers, body: JSON.stringify({ global_id: created.data.job_id }) })).json()) as any;
    expect(polled.code).toBe(100000);
  } finally {
    await app.close();
    await container.close(1000);
    await rm(dataDir, { recursive: true, force: true });
  }
  return lines.map((l) => JSON.parse(l)).map((l) => ({ msg: l.msg, url: l.req?.url, level: l.level }));
}

const requestLines = (logs: Array<{ msg: string; url?: string }>, path: string) =>
  logs.filter((l) => l.msg === 'request completed' && l.url === `${API}/${path}`).length;

describe('request logging of polls', () => {
  it('at LOG_LEVEL=info, creates are logged in one line per request and polls are not', async () => {
    const logs = await logsOfCreateAndPoll('info');
    expect(requestLines(logs, 'tts/task/create')).toBe(1);
    expect(requestLines(logs, 'tts/task/get')).toBe(0);
    // Fastify's own pair of lines per request is off: each request is one line.
    expect(logs.filter((l) => l.msg === 'incoming request')).toEqual([]);
  }, 60_000);

  it('at LOG_LEVEL=debug, polls are logged too', async () => {
    const logs = await logsOfCreateAndPoll('debug');
    expect(requestLines(logs, 'tts/task/get')).toBe(1);
  }, 60_000);

  it('a signed link is logged without its signature, which would make the line a working download link', () => {
    expect(withoutSignature('/files/tasks/a/output.mp3?exp=1764000000&sig=AbC_d-9')).toBe('/files/tasks/a/output.mp3?exp=1764000000&sig=-');
    expect(withoutSignature('/files/x.mp3?sig=AbC&exp=1')).toBe('/files/x.mp3?sig=-&exp=1');
    expect(withoutSignature(`${API}/tts/task/create`)).toBe(`${API}/tts/task/create`);
  });
});
