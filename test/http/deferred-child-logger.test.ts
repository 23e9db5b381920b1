import { Writable } from 'node:stream';
import Fastify, { type FastifyBaseLogger } from 'fastify';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { deferredChildLogger } from '../../src/http/deferred-child-logger.js';

const lines: Array<Record<string, unknown>> = [];
const sink = new Writable({ write: (chunk, _enc, done) => (lines.push(...String(chunk).trim().split('\n').map((l) => JSON.parse(l))), done()) });
let close: (() => Promise<void>) | null = null;
afterEach(async () => {
  await close?.();
  lines.length = 0;
});

/** The lines written while answering requests (each carries its request's id). */
const requestLines = () => lines.filter((l) => 'reqId' in l);

/** A real server with the deferred request loggers; `warnOnly` routes run at level warn, as polls do. */
async function server(level: 'info' | 'debug') {
  const app = Fastify({ loggerInstance: pino({ level }, sink) as FastifyBaseLogger, childLoggerFactory: deferredChildLogger });
  const levels: string[] = [];
  const handler = async (request: { log: FastifyBaseLogger }) => {
    levels.push(request.log.level);
    request.log.debug('a debug line');
    request.log.info({ n: 1 }, 'an info line');
    request.log.warn('a warning');
    request.log.child({ part: 'inner' }).warn('from a child');
    return { ok: true };
  };
  app.get('/plain', handler);
  app.get('/warn-only', { logLevel: 'warn' }, handler);
  await app.listen({ host: '127.0.0.1', port: 0 });
  close = () => app.close();
  const address = app.server.address();
  const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  return { get: async (path: string) => (await fetch(`${base}${path}`)).json(), levels };
}

describe('request loggers made only when they write (deferred-child-logger.ts)', () => {
  it("writes a request's lines at the levels it allows, each with the request's id, as pino's own child did", async () => {
    const s = await server('info');
    expect(await s.get('/plain')).toEqual({ ok: true });
    const request = requestLines();
    // Fastify's own two lines go through the same logger.
    expect(request.map((l) => l.msg)).toEqual(['incoming request', 'an info line', 'a warning', 'from a child', 'request completed']);
    expect(new Set(request.map((l) => l.reqId)).size).toBe(1);
    expect(request[0]!.reqId).toEqual(expect.any(String));
    expect(request[1]!.n).toBe(1);
    expect(request[3]!.part).toBe('inner');
    expect(s.levels).toEqual(['info']);
  });

  it("keeps a route's own level: a warn-level route drops its info lines and reports its level", async () => {
    const s = await server('debug');
    await s.get('/warn-only');
    expect(requestLines().map((l) => l.msg)).toEqual(['a warning', 'from a child']);
    expect(s.levels).toEqual(['warn']);
    lines.length = 0;
    await s.get('/plain');
    expect(requestLines().map((l) => l.msg)).toEqual(['incoming request', 'a debug line', 'an info line', 'a warning', 'from a child', 'request completed']);
  });
});
