import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveMediaTools } from '../../src/media/ffmpeg.js';
import { emotionFromInstructions } from '../../src/kinds/tts/openai.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

/** POST /v1/audio/speech and its lists, driven by the official `openai` client against a real server. */
const run = promisify(execFile);
const tools = resolveMediaTools({ preferSystem: true });

let app: TestApp;
let key: string;
let accountId: string;
let client: OpenAI;

const SHORT = 'The quick brown fox jumps over the lazy dog.';
const LONG = Array.from({ length: 8 }, (_, i) => `This is sentence number ${i + 1} of a longer text, spoken one sentence at a time.`).join(' ');

async function decodedSeconds(bytes: Buffer, name: string, inputArgs: string[] = []): Promise<number> {
  const file = join(app.dataDir, name);
  await writeFile(file, bytes);
  // Decoded to the end (not the header's claim): a streamed WAV's header has no length.
  const { stdout } = await run(tools.ffmpeg, ['-hide_banner', '-nostdin', ...inputArgs, '-i', file, '-f', 's16le', '-ac', '1', '-ar', '24000', 'pipe:1'], {
    encoding: 'buffer',
    maxBuffer: 64 * 1024 * 1024,
  });
  return stdout.length / 2 / 24000;
}

beforeAll(async () => {
  app = await startTestApp({ WORKER_THREADS: '1' }, { workers: false });
  ({ key, accountId } = await app.newKey({ credits: 1000 }));
  client = new OpenAI({ apiKey: key, baseURL: `${app.baseUrl}/v1`, maxRetries: 0 });
});
afterAll(async () => app?.close());

describe('OpenAI-compatible speech', () => {
  it.each([
    ['mp3', 'audio/mpeg'],
    ['wav', 'audio/wav'],
    ['opus', 'audio/ogg'],
    ['aac', 'audio/aac'],
    ['flac', 'audio/flac'],
  ] as const)('%s: the client gets audio that ffmpeg decodes to a plausible duration', async (format, type) => {
    const res = await client.audio.speech.create({ model: 'tts-1', voice: 'alloy', input: SHORT, response_format: format });
    expect(res.headers.get('content-type')).toBe(type);
    const seconds = await decodedSeconds(Buffer.from(await res.arrayBuffer()), `speech.${format}`);
    expect(seconds).toBeGreaterThan(1.2);
    expect(seconds).toBeLessThan(8);
  });

  it('pcm is raw 24 kHz s16le mono, as OpenAI sends it', async () => {
    const res = await client.audio.speech.create({ model: 'gpt-4o-mini-tts', voice: 'onyx', input: SHORT, response_format: 'pcm' });
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(bytes.length % 2).toBe(0);
    const seconds = await decodedSeconds(bytes, 'speech.pcm', ['-f', 's16le', '-ar', '24000', '-ac', '1']);
    expect(seconds).toBeCloseTo(bytes.length / 2 / 24000, 3);
    expect(seconds).toBeGreaterThan(1.2);
    expect(seconds).toBeLessThan(8);
  });

  it('speed 2 is shorter than speed 1; a Soundry voice id works as the voice', async () => {
    const at = async (speed: number) =>
      decodedSeconds(Buffer.from(await (await client.audio.speech.create({ model: 'tts-1', voice: '1001', input: SHORT, response_format: 'pcm', speed })).arrayBuffer()), `s${speed}.pcm`, ['-f', 's16le', '-ar', '24000', '-ac', '1']);
    const [one, two] = [await at(1), await at(2)];
    expect(two / one).toBeLessThan(0.75);
  });

  it('streams: the first bytes arrive long before a multi-sentence text is done', async () => {
    // Warm the engine thread first (run alone, this test would otherwise time the thread's start-up).
    await (await client.audio.speech.create({ model: 'tts-1', voice: 'nova', input: SHORT, response_format: 'pcm' })).arrayBuffer();
    const t0 = performance.now();
    const res = await client.audio.speech.create({ model: 'tts-1', voice: 'nova', input: LONG, response_format: 'mp3' });
    const reader = res.body!.getReader();
    let firstAt = 0;
    let total = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (!firstAt && value.length > 0) firstAt = performance.now() - t0;
      total += value.length;
    }
    const allAt = performance.now() - t0;
    console.log(`speech stream: first chunk at ${firstAt.toFixed(0)} ms, last at ${allAt.toFixed(0)} ms, ${total} bytes`);
    expect(total).toBeGreaterThan(10_000);
    // Eight sentences, each synthesized in turn: the first one's audio leaves before half the time is spent.
    expect(firstAt, `first chunk at ${firstAt.toFixed(0)} ms of ${allAt.toFixed(0)} ms`).toBeLessThan(allAt * 0.5);
  });

  it('an unknown voice is a 400 the client raises as BadRequestError, naming the voice', async () => {
    const err = await client.audio.speech.create({ model: 'tts-1', voice: 'no-such-voice', input: SHORT }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    const e = err as InstanceType<typeof OpenAI.BadRequestError>;
    expect(e.status).toBe(400);
    expect(e.param).toBe('voice');
    expect(e.type).toBe('invalid_request_error');
  });

  it('an input with nothing to say is a 400 naming `input` (the task\'s own check, worded for this route)', async () => {
    const err = await client.audio.speech.create({ model: 'tts-1', voice: 'alloy', input: '...!!! 🎉' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    const e = err as InstanceType<typeof OpenAI.BadRequestError>;
    expect(e.param).toBe('input');
    expect(e.message).toContain('Invalid input: must contain something to say');
  });

  it('an unknown model and an out-of-range speed are 400s too', async () => {
    await expect(client.audio.speech.create({ model: 'whisper-1', voice: 'alloy', input: SHORT })).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    await expect(client.audio.speech.create({ model: 'tts-1', voice: 'alloy', input: SHORT, speed: 9 })).rejects.toBeInstanceOf(OpenAI.BadRequestError);
  });

  it('a body with a __proto__ key is a 400 naming it, not "not valid JSON"', async () => {
    const res = await fetch(`${app.baseUrl}/v1/audio/speech`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: '{"__proto__":{"admin":true},"model":"tts-1","voice":"alloy","input":"hi"}',
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { message: string; type: string } }).error).toMatchObject({
      type: 'invalid_request_error',
      message: 'Invalid parameters: body: keys named __proto__ (or constructor with a prototype) are not accepted',
    });
  });

  it('a bad key is a 401 AuthenticationError with OpenAI\'s error body', async () => {
    const bad = new OpenAI({ apiKey: 'sk_not_a_key', baseURL: `${app.baseUrl}/v1`, maxRetries: 0 });
    const err = await bad.audio.speech.create({ model: 'tts-1', voice: 'alloy', input: SHORT }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((err as InstanceType<typeof OpenAI.AuthenticationError>).code).toBe('invalid_api_key');
  });

  it('charges the TTS price once per request, and refuses with 402 when the balance is short', async () => {
    const own = await app.newKey({ credits: 5 });
    const c = new OpenAI({ apiKey: own.key, baseURL: `${app.baseUrl}/v1`, maxRetries: 0 });
    const text = 'a'.repeat(150) + '. Done.'; // 157 characters: 2 credits, the TTS rule
    await (await c.audio.speech.create({ model: 'tts-1', voice: 'echo', input: text, response_format: 'wav' })).arrayBuffer();
    expect((await app.container.accounts.getAccount(own.accountId))!.balance).toBe(3);
    const ledger = await app.container.accounts.ledger(own.accountId, 10);
    expect(ledger.filter((l) => l.reason === 'openai_speech').map((l) => l.amount)).toEqual([-2]);
    await (await c.audio.speech.create({ model: 'tts-1', voice: 'echo', input: text, response_format: 'wav' })).arrayBuffer();
    expect((await app.container.accounts.getAccount(own.accountId))!.balance).toBe(1);
    const err = await c.audio.speech.create({ model: 'tts-1', voice: 'echo', input: text }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(402);
    expect((err as InstanceType<typeof OpenAI.APIError>).code).toBe('insufficient_quota');
    expect((await app.container.accounts.getAccount(own.accountId))!.balance).toBe(1);
  });

  it('the key\'s rate limit answers 429 RateLimitError with Retry-After', async () => {
    const slow = await app.newKey({ credits: 100, rateLimit: 0.01 });
    const c = new OpenAI({ apiKey: slow.key, baseURL: `${app.baseUrl}/v1`, maxRetries: 0 });
    await c.models.list();
    const err = await c.models.list().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    expect((err as InstanceType<typeof OpenAI.RateLimitError>).headers.get('retry-after')).toMatch(/^\d+$/);
  });

  it('instructions pick the first emotion they name, else auto', () => {
    expect(emotionFromInstructions('Speak in a cheerful, upbeat tone')).toBe(1);
    expect(emotionFromInstructions('Calm at first, then sad')).toBe(8);
    expect(emotionFromInstructions('Sound scared.')).toBe(4);
    expect(emotionFromInstructions('Read like a newsreader')).toBe(0);
    expect(emotionFromInstructions(undefined)).toBe(0);
  });

  it('lists the speech models and the voices', async () => {
    const models = [];
    for await (const m of client.models.list()) models.push(m.id);
    expect(models).toEqual(expect.arrayContaining(['tts-1', 'tts-1-hd', 'gpt-4o-mini-tts']));
    const res = await fetch(`${app.baseUrl}/v1/audio/voices`, { headers: { authorization: `Bearer ${key}` } });
    const voices = (await res.json()) as { data: Array<{ id: string; soundry_voice_id: number }> };
    expect(voices.data.map((v) => v.id)).toEqual(expect.arrayContaining(['alloy', 'nova', 'onyx', 'espeak:en-us:m1']));
    expect(accountId).toBeTruthy();
  });
});
