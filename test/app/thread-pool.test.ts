import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineThreadPool } from '../../src/app/thread-pool.js';
import { resolveMediaTools } from '../../src/media/ffmpeg.js';
import { encodeWav } from '../../src/media/wav.js';

const tools = resolveMediaTools({ preferSystem: true });
const RATE = 44100;
const SECONDS = 30;
let dir: string;
let input: string;
let pool: EngineThreadPool;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pool-lanes-'));
  const len = RATE * SECONDS;
  let seed = 7;
  const noise = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff - 0.5) * 0.2;
  const ch = () => Float32Array.from({ length: len }, (_, i) => 0.3 * Math.sin((2 * Math.PI * 110 * i) / RATE) + noise());
  input = join(dir, 'song.wav');
  await writeFile(input, encodeWav({ sampleRate: RATE, channels: [ch(), ch()] }, 16));
  // One long-work thread: without lanes, the TTS call below would queue behind the separation.
  pool = new EngineThreadPool({ threads: 1, env: { modelsDir: join(dir, 'models'), separationEngine: 'builtin' } });
});
afterAll(async () => {
  await pool?.destroy();
  await rm(dir, { recursive: true, force: true });
});

describe('engine thread lanes', () => {
  it('runs a TTS sentence while a long separation holds every long-work thread', async () => {
    const order: string[] = [];
    const separation = pool
      .run(
        'separation',
        {
          inputPath: input, outDir: dir, modelType: 320, sampleRate: RATE, channels: 2, totalFrames: RATE * SECONDS,
          format: 'wav', ffmpeg: tools.ffmpeg, keep: ['bass', 'drums', 'vocals', 'piano', 'guitar', 'other'], mixes: {},
        },
        { signal: new AbortController().signal, onProgress: () => {} },
      )
      .then(() => order.push('separation'));
    const tts = pool
      .run('tts', { text: 'Short work first.', language: 'en', voiceId: 1001, emotion: 0, speed: 1 }, { signal: new AbortController().signal, onProgress: () => {} })
      .then((out) => {
        order.push('tts');
        return out;
      });
    const speech = await tts;
    expect(speech.samples.length).toBeGreaterThan(speech.sampleRate / 2);
    await separation;
    expect(order).toEqual(['tts', 'separation']);
  }, 180_000);
});
