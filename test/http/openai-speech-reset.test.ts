import { connect } from 'node:net';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';

/**
 * Found from outside: a client that resets /v1/audio/speech before its first audio paid nothing (refunded) but cost
 * the server a level-50 "unhandled error" line and, through Piscina's abort, a terminated engine thread that a new
 * one replaced by loading the engines again (test/app/thread-pool.test.ts covers the thread). Here: the log and
 * the refund, through a real connection reset while the first sentence is being spoken.
 */
const lines: Array<{ level: number; msg: string }> = [];
let app: TestApp;
let key: string;
let accountId: string;

beforeAll(async () => {
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line) as { level: number; msg: string });
      done();
    },
  });
  app = await startTestApp({ WORKER_THREADS: '1' }, { workers: false, logger: pino({ level: 'info' }, sink) });
  ({ key, accountId } = await app.newKey({ credits: 100 }));
});
afterAll(async () => app?.close());

async function until(what: string, check: () => Promise<boolean> | boolean, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

describe('a speech request reset before its first audio', () => {
  it('is refunded, and logged as the client leaving, not as a server error', async () => {
    // One long first sentence (no full stop until the end): its synthesis outlasts the reset below.
    const input = `${'a long first sentence with many words in it and no stop '.repeat(12)}end.`;
    const body = JSON.stringify({ model: 'tts-1', voice: 'alloy', input, response_format: 'mp3' });
    const socket = connect(Number(new URL(app.baseUrl).port), '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.on('error', () => undefined);
    socket.write(`POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    const ledger = () => app.container.accounts.ledger(accountId, 10);
    // Charged: the request is in its handler, speaking the first sentence. Then the client resets the connection.
    await until('the charge', async () => (await ledger()).some((l) => l.reason === 'openai_speech'));
    socket.resetAndDestroy();
    await until('the refund', async () => (await ledger()).some((l) => l.reason === 'openai_speech_refund'));
    expect((await app.container.accounts.getAccount(accountId))!.balance).toBe(100);
    await until('the log line', () => lines.some((l) => l.msg === 'speech request closed by the client before its first audio: refunded'));
    expect(lines.filter((l) => l.level >= 50)).toEqual([]);
  }, 60_000);

  it('a client that closes its end normally before any audio (curl -m, a fetch abort) is refunded; one that only half-closes reads the audio and pays', async () => {
    const { key: key2, accountId: account2 } = await app.newKey({ credits: 100 });
    const input = `${'a long first sentence with many words in it and no stop '.repeat(12)}end. ${'and a second one, as long, to follow it '.repeat(10)}end.`;
    const body = JSON.stringify({ model: 'tts-1', voice: 'alloy', input, response_format: 'mp3' });
    const request = `POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key2}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    const port = Number(new URL(app.baseUrl).port);
    const ledger = () => app.container.accounts.ledger(account2, 20);
    const charges = async () => (await ledger()).filter((l) => l.reason === 'openai_speech').length;
    const refunds = async () => (await ledger()).filter((l) => l.reason === 'openai_speech_refund').length;

    // Closed (FIN, then nobody reads): with half-open connections allowed the server only learns it at its first write.
    const gone = connect(port, '127.0.0.1');
    await new Promise<void>((resolve) => gone.once('connect', () => resolve()));
    gone.on('error', () => undefined);
    gone.write(request);
    await until('the charge', async () => (await charges()) === 1);
    gone.destroy();
    await until('the refund', async () => (await refunds()) === 1);
    expect((await app.container.accounts.getAccount(account2))!.balance).toBe(100);

    // Half-closed (shutdown of its sending side only), still reading: the whole answer, charged once, no refund.
    const reader = connect(port, '127.0.0.1');
    await new Promise<void>((resolve) => reader.once('connect', () => resolve()));
    const received: Buffer[] = [];
    reader.on('data', (d: Buffer) => received.push(d));
    const ended = new Promise<void>((resolve) => reader.once('end', () => resolve()));
    reader.end(request);
    await ended;
    const answer = Buffer.concat(received).toString('latin1');
    expect(answer.startsWith('HTTP/1.1 200')).toBe(true);
    expect(answer).toMatch(/\r\n0\r\n\r\n$/); // the chunked body ran to its end
    expect(await charges()).toBe(2);
    expect(await refunds()).toBe(1);
    expect(lines.filter((l) => l.level >= 40 && l.msg.startsWith('speech'))).toEqual([]);
  }, 90_000);
});
