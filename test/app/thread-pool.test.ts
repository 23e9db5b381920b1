import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Worker } from 'node:worker_threads';
import { EngineThreadPool, threadExecArgv } from '../../src/app/thread-pool.js';
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

describe('cancelling short work', () => {
  // Found from outside: Piscina terminated the thread of every cancelled run, and a client resetting /v1/audio/speech
  // requests kept the engine threads restarting (about 1.3 s of CPU each) while paying nothing.
  it('a started TTS run cancelled by its caller is answered at once and keeps its warm thread', async () => {
    await pool.run('tts', { text: 'Warm up.', language: 'en', voiceId: 1001, emotion: 0, speed: 1 }, { signal: new AbortController().signal, onProgress: () => {} });
    const before = pool.threadIds();
    const cancel = new AbortController();
    const text = 'A long paragraph for the engine to read, so that it is still speaking when its caller goes away. '.repeat(40);
    let progressed!: () => void;
    const progress = new Promise<void>((resolve) => (progressed = resolve));
    const run = pool.run('tts', { text, language: 'en', voiceId: 1001, emotion: 0, speed: 1 }, { signal: cancel.signal, onProgress: () => progressed() });
    const outcome = run.then(
      () => 'finished',
      (err: Error) => err.message,
    );
    await progress;
    const at = Date.now();
    cancel.abort(new Error('client closed the connection'));
    expect(await outcome).toBe('client closed the connection');
    expect(Date.now() - at).toBeLessThan(200);
    // The same thread, still warm: the next sentence does not wait for a new one to start.
    const next = await pool.run('tts', { text: 'And the next one.', language: 'en', voiceId: 1001, emotion: 0, speed: 1 }, { signal: new AbortController().signal, onProgress: () => {} });
    expect(next.samples.length).toBeGreaterThan(0);
    expect(pool.threadIds()).toEqual(before);
  }, 120_000);
});

/** Nice value of each thread of this process (Linux /proc: field 19 of a task's stat line). */
async function threadNices(): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  for (const tid of await readdir('/proc/self/task')) {
    const stat = await readFile(`/proc/self/task/${tid}/stat`, 'utf8').catch(() => null);
    if (!stat) continue; // the thread ended meanwhile
    // The fields after the command name (which may hold spaces) start at "state", field 3.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    out.set(Number(tid), Number(fields[19 - 3]));
  }
  return out;
}

describe.runIf(process.platform === 'linux')('engine thread priority (ENGINE_NICE)', () => {
  it('runs engine threads at the configured nice value and leaves the event loop thread as it was', async () => {
    const before = await threadNices();
    const own = before.get(process.pid)!;
    const niced = new EngineThreadPool({ threads: 1, env: { modelsDir: join(dir, 'models'), separationEngine: 'builtin', nice: own + 7 } });
    try {
      const speech = await niced.run('tts', { text: 'Lower priority.', language: 'en', voiceId: 1001, emotion: 0, speed: 1 }, { signal: new AbortController().signal, onProgress: () => {} });
      expect(speech.samples.length).toBeGreaterThan(0);
      const after = await threadNices();
      const lowered = [...after].filter(([tid, nice]) => !before.has(tid) && nice === own + 7);
      expect(lowered.length).toBeGreaterThanOrEqual(1);
      expect(after.get(process.pid)).toBe(own);
    } finally {
      await niced.destroy();
    }
  }, 60_000);
});

describe('engine thread scratch folders', () => {
  it("runs in the caller's folder when given one, and leaves that folder to the caller", async () => {
    const own = await mkdtemp(join(dir, 'task-'));
    await writeFile(join(own, 'kept.txt'), 'the task keeps its files');
    const speech = await pool.run('tts', { text: 'In my folder.', language: 'en', voiceId: 1001, emotion: 0, speed: 1 }, { signal: new AbortController().signal, onProgress: () => {}, tmpDir: own });
    expect(speech.samples.length).toBeGreaterThan(0);
    expect(await readdir(own)).toEqual(['kept.txt']);
    // Flite writes its output in the run's scratch folder: pointed at a folder that does not exist, the run
    // fails, which shows the thread used the caller's folder and not one the pool made.
    const flite = { text: 'Nowhere to write.', language: 'en', voiceId: 2001, emotion: 0, speed: 1 };
    await expect(pool.run('tts', flite, { signal: new AbortController().signal, onProgress: () => {}, tmpDir: join(dir, 'missing') })).rejects.toThrow();
    expect((await pool.run('tts', flite, { signal: new AbortController().signal, onProgress: () => {} })).samples.length).toBeGreaterThan(0);
  }, 60_000);
});

describe("the process's Node flags in engine threads", () => {
  it('keeps what a thread takes (module loading, warnings), drops what Node refuses in a thread, values with their flags', async () => {
    const argv = ['--max-old-space-size=1024', '--title', 'soundry', '-r', 'dotenv/config', '--expose-gc', '--stack-size', '2000', '--import', 'tsx',
      '--conditions=development', '--perf-basic-prof', '--enable-source-maps', '--no-warnings', '--trace-gc', '--unhandled-rejections=strict'];
    const kept = threadExecArgv(argv);
    expect(kept).toEqual(['--require', 'dotenv/config', '--import', 'tsx', '--conditions=development', '--enable-source-maps', '--no-warnings', '--unhandled-rejections=strict']);
    // Node itself refuses the whole list in a thread, and takes what is kept (without the module flags, whose
    // modules need not exist here): a real thread starts with them and exits cleanly.
    expect(() => new Worker('0', { eval: true, execArgv: argv })).toThrow(/invalid execArgv/);
    const worker = new Worker('0', { eval: true, execArgv: kept.filter((a) => !['--require', '--import', 'dotenv/config', 'tsx'].includes(a)) });
    expect(await new Promise((resolve) => worker.once('exit', resolve))).toBe(0);
  });
});

describe('engine thread health', () => {
  it('starts a thread on the first check and answers ok once it has loaded the engines, without starting another', async () => {
    const fresh = new EngineThreadPool({ threads: 1, env: { modelsDir: join(dir, 'models'), separationEngine: 'builtin' } });
    try {
      expect(fresh.known()).toBe('not started');
      // 'starting' if the thread takes longer than the check waits; it answers within the test's bound.
      const first = await fresh.health();
      expect(['ok', 'starting']).toContain(first);
      const settled = await (async () => {
        for (let i = 0; i < 100 && (await fresh.health()) !== 'ok'; i++) await new Promise((r) => setTimeout(r, 100));
        return fresh.health();
      })();
      expect(settled).toBe('ok');
      expect(fresh.known()).toBe('ok');
      expect(fresh.threads).toBe(1);
    } finally {
      await fresh.destroy();
    }
    expect(await fresh.health()).toBe('stopped');
  }, 60_000);
});
