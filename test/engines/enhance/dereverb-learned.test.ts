/**
 * The learned dereverberation stage's own contract (its network against the reference is in
 * test/engines/reference/dereverb.test.ts): any rate and layout in, the same rate, layout and length out; abort;
 * and which stage createDereverbStage gives (learned when the catalog's model is installed and verified, else WPE
 * with the reason).
 */
import { createHash } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createDereverbStage, dereverbModels, dereverbPullPlan, LearnedDereverbStage, type StemNetwork } from '../../../src/engines/enhance/learned-dereverb.js';
import { DereverbStage } from '../../../src/engines/enhance/dereverb.js';
import { processWhole } from '../../../src/engines/enhance/stage.js';
import { siSdr } from '../../../src/engines/enhance/metrics.js';
import type { Stereo } from '../../../src/engines/separation/onnx/roformer-chunks.js';
import type { ModelEntry } from '../../../src/models/catalog.js';

const GOLDEN = join(import.meta.dirname, '..', '..', 'fixtures', 'golden', 'dereverb_roformer');

/** A stand-in network that returns its input as the dry stem, in blocks that lag the input like the RoFormer's. */
function identityNet(lag: number): StemNetwork {
  const held: Float32Array[][] = [[], []];
  const take = (all: boolean): Array<Record<string, Stereo>> => {
    const total = held[0]!.reduce((a, p) => a + p.length, 0);
    const n = all ? total : Math.max(0, total - lag);
    if (n === 0) return [];
    const out = held.map((parts) => {
      const joined = new Float32Array(total);
      let at = 0;
      for (const p of parts) { joined.set(p, at); at += p.length; }
      parts.length = 0;
      parts.push(joined.slice(n));
      return joined.slice(0, n);
    }) as Stereo;
    return [{ noreverb: out, reverb: [new Float32Array(n), new Float32Array(n)] }];
  };
  return {
    stems: ['noreverb', 'reverb'],
    push: async (x) => { held[0]!.push(x[0]); held[1]!.push(x[1]); return take(false); },
    end: async () => take(true),
  };
}

const tone = (n: number, rate: number, f: number, phase = 0) => Float32Array.from({ length: n }, (_, i) => 0.4 * Math.sin((2 * Math.PI * f * i) / rate + phase));

describe('LearnedDereverbStage (stand-in network)', () => {
  for (const [rate, chans] of [[16000, 1], [48000, 2], [44100, 1], [22050, 2]] as const) {
    it(`${rate} Hz, ${chans} channel(s): same rate, layout and length; the dry stem comes back at the input rate`, async () => {
      const n = Math.round(rate * 1.7) + 13;
      const x = { sampleRate: rate, channels: Array.from({ length: chans }, (_, c) => tone(n, rate, 330 + 110 * c, c)) };
      const y = await processWhole([new LearnedDereverbStage(rate, chans, identityNet(9000), 44100, 'noreverb')], x, 4000);
      expect(y.sampleRate).toBe(rate);
      expect(y.channels.length).toBe(chans);
      for (let c = 0; c < chans; c++) {
        expect(y.channels[c]!.length).toBe(n);
        // The resampler's round trip only: away from the edges the tone is what went in.
        const mid = (a: Float32Array) => a.subarray(200, n - 200);
        expect(siSdr(mid(y.channels[c]!), mid(x.channels[c]!))).toBeGreaterThan(40);
      }
    });
  }

  it('refuses a network without the dry stem, and more than two channels', () => {
    expect(() => new LearnedDereverbStage(16000, 1, identityNet(0), 44100, 'dry')).toThrow(/no 'dry'/);
    expect(() => new LearnedDereverbStage(16000, 3, identityNet(0), 44100, 'noreverb')).toThrow(/mono or stereo/);
  });

  it('stops when the task is aborted', async () => {
    const ctl = new AbortController();
    const stage = new LearnedDereverbStage(16000, 1, identityNet(0), 44100, 'noreverb', ctl.signal);
    await stage.push({ sampleRate: 16000, channels: [tone(1600, 16000, 200)] });
    ctl.abort(new Error('cancelled'));
    await expect(stage.push({ sampleRate: 16000, channels: [tone(1600, 16000, 200)] })).rejects.toThrow('cancelled');
  });
});

describe('createDereverbStage', () => {
  const dirs: string[] = [];
  afterAll(async () => { for (const d of dirs) await rm(d, { recursive: true, force: true }); });
  const emptyDir = async () => { const d = await mkdtemp(join(tmpdir(), 'soundry-dereverb-')); dirs.push(d); return d; };

  it('without the learned model: WPE, naming the model to install; the pull plan is that model', async () => {
    const modelsDir = await emptyDir();
    const made = await createDereverbStage({ sampleRate: 16000, channels: 1, models: { modelsDir } });
    expect(made.kind).toBe('wpe');
    expect(made.stage).toBeInstanceOf(DereverbStage);
    expect(made.why).toContain('dereverb-mel-band-roformer-anvuew');
    expect(dereverbPullPlan({ modelsDir }).map((e) => e.name)).toEqual(['dereverb-mel-band-roformer-anvuew']);
    const failed = await createDereverbStage({ sampleRate: 16000, channels: 1, models: { modelsDir }, problem: 'download stalled' });
    expect(failed.why).toContain('download stalled');
    const echo = await createDereverbStage({ sampleRate: 16000, channels: 1, models: { modelsDir }, echo: true });
    expect(echo.why).toMatch(/predicting from 0\.25 s for echoes/);
  });

  it('the catalog entry describes a runnable model (meta checked), GPL-3.0 and pinned by sha256', () => {
    const [first] = dereverbModels();
    expect(first?.entry.name).toBe('dereverb-mel-band-roformer-anvuew');
    expect(first?.meta.dryStem).toBe('noreverb');
    expect(first?.entry.license).toMatch(/GPL-3\.0/);
    for (const f of first!.entry.files) expect(f.sha256).toMatch(/^[0-9a-f]{64}$/);
  });

  it('with an installed, verified model: the learned stage, which dereverberates at the input rate; wpe preference and >2 channels keep WPE', async () => {
    const modelsDir = await emptyDir();
    const name = 'test-dereverb';
    await mkdir(join(modelsDir, name));
    const files = [];
    for (const f of ['model.ckpt', 'config.yaml']) {
      await copyFile(join(GOLDEN, f), join(modelsDir, name, f));
      files.push({ path: f, url: `https://example.invalid/${f}`, sizeBytes: (await stat(join(GOLDEN, f))).size, sha256: createHash('sha256').update(await readFile(join(GOLDEN, f))).digest('hex') });
    }
    const entry: ModelEntry = {
      name, kind: 'enhance', description: 'test', license: 'test', files,
      meta: { engine: 'roformer-dereverb', architecture: 'mel_band_roformer', sampleRate: 44100, dryStem: 'noreverb', checkpointFile: 'model.ckpt', configFile: 'config.yaml' },
    };
    const models = { modelsDir, catalog: [entry] };
    expect(dereverbPullPlan(models)).toEqual([]);
    const made = await createDereverbStage({ sampleRate: 16000, channels: 1, models, threads: 1 });
    expect(made.kind).toBe('roformer-dereverb');
    expect(made.model).toBe(name);
    const n = 16000 + 77;
    const y = await processWhole([made.stage], { sampleRate: 16000, channels: [tone(n, 16000, 250)] }, 3000);
    expect(y.channels[0]!.length).toBe(n);
    expect(y.channels[0]!.some((v) => v !== 0)).toBe(true);
    expect((await createDereverbStage({ sampleRate: 16000, channels: 1, models, preference: 'wpe' })).kind).toBe('wpe');
    expect((await createDereverbStage({ sampleRate: 16000, channels: 4, models })).kind).toBe('wpe');
  });
});

describe('createDereverbStage on CPU alone', () => {
  it('a long input gets WPE with the time the learned model would take; a short one, an accelerator or `learned` do not', async () => {
    // No model installed: the length rule decides before anything is loaded, and its reason is the one given.
    const models = { modelsDir: join(tmpdir(), 'soundry-no-such-models-dir') };
    const long = await createDereverbStage({ sampleRate: 16000, channels: 1, models, inputSeconds: 3600, cpuMaxSeconds: 600 });
    expect(long.kind).toBe('wpe');
    expect(long.why).toMatch(/about 420 min for 60\.0 min of audio/);
    const short = await createDereverbStage({ sampleRate: 16000, channels: 1, models, inputSeconds: 60, cpuMaxSeconds: 600 });
    expect(short.why).toMatch(/no learned dereverberation model installed/);
    const gpu = await createDereverbStage({ sampleRate: 16000, channels: 1, models, inputSeconds: 3600, cpuMaxSeconds: 600, executionProviders: ['cuda', 'cpu'] });
    expect(gpu.why).toMatch(/no learned dereverberation model installed/);
    const forced = await createDereverbStage({ sampleRate: 16000, channels: 1, models, inputSeconds: 3600, cpuMaxSeconds: 600, preference: 'learned' });
    expect(forced.why).toMatch(/no learned dereverberation model installed/);
    // Nothing is downloaded for a request that would get WPE anyway.
    expect(dereverbPullPlan(models, { inputSeconds: 3600, cpuMaxSeconds: 600 })).toEqual([]);
    expect(dereverbPullPlan(models, { preference: 'wpe' })).toEqual([]);
    expect(dereverbPullPlan(models, { inputSeconds: 60, cpuMaxSeconds: 600 }).map((e) => e.name)).toEqual(['dereverb-mel-band-roformer-anvuew']);
  });
});
