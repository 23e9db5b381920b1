import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeepFilterStage, deepFilterAvailable, levelGuardGain, loadDeepFilter } from '../../../src/engines/enhance/deepfilter-stage.js';
import { enhanceDf } from '../../../src/engines/enhance/deepfilter-core.js';
import { decideDenoiser, createChosenDenoiser } from '../../../src/engines/enhance/engine-choice.js';
import { processWhole } from '../../../src/engines/enhance/stage.js';
import { MODEL_CATALOG, type ModelEntry } from '../../../src/models/catalog.js';
import { DFN3_ARCHIVE } from '../../../src/models/catalog-enhance.js';
import type { ModelSource } from '../../../src/models/verified.js';
import { pinToBytes } from '../../fixtures/pinned-catalog.js';

/**
 * The DeepFilterNet3 stage on the small seeded export the reference harness writes (test/fixtures/golden/dfn3: the
 * authors' export() of a DFN3 with small hidden sizes, laid out as the published archive), installed in a temp
 * MODELS_DIR under a catalog pinned to its bytes, as a site's MODELS_CATALOG_FILE would pin it.
 */
const GOLDEN = new URL('../../fixtures/golden/dfn3/DeepFilterNet3_onnx.tar.gz', import.meta.url).pathname;
const archive = readFileSync(GOLDEN);
const entry = MODEL_CATALOG.find((e) => e.name === 'deepfilternet3')!;
let dir: string;

async function install(name: string, bytes: Uint8Array): Promise<ModelSource> {
  const modelsDir = join(dir, name);
  await mkdir(join(modelsDir, 'deepfilternet3'), { recursive: true });
  await writeFile(join(modelsDir, 'deepfilternet3', DFN3_ARCHIVE), bytes);
  const catalog: ModelEntry[] = MODEL_CATALOG.map((e) => (e.name === 'deepfilternet3' ? pinToBytes(e, { [DFN3_ARCHIVE]: bytes }) : e));
  return { modelsDir, catalog, memo: new Map() };
}

/** Speech-like test signal: harmonic bursts on a moving pitch, with noise, at `rate`. */
function signal(seconds: number, rate: number, seed = 1): Float32Array {
  const x = new Float32Array(Math.round(seconds * rate));
  let s = seed;
  const rnd = () => ((s = (s * 1103515245 + 12345) >>> 0) / 2 ** 32) * 2 - 1;
  for (let i = 0; i < x.length; i++) {
    const t = i / rate;
    const on = Math.sin(2 * Math.PI * 2.3 * t) > -0.2 ? 1 : 0;
    const f0 = 140 + 30 * Math.sin(2 * Math.PI * 0.7 * t);
    let v = 0;
    for (let h = 1; h <= 8; h++) v += Math.sin(2 * Math.PI * f0 * h * t) / h;
    x[i] = 0.2 * on * v + 0.03 * rnd();
  }
  return x;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'soundry-dfn3-stage-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('DeepFilterNet3 stage', () => {
  it('is available only once the archive verifies against the catalog', async () => {
    const models = await install('verify', archive);
    expect(deepFilterAvailable(models)).toBe(true);
    // The built-in catalog pins the published archive: the small export is not it.
    expect(deepFilterAvailable({ modelsDir: models.modelsDir })).toBe(false);
    expect(deepFilterAvailable({ modelsDir: join(dir, 'nothing') })).toBe(false);
    await expect(loadDeepFilter({ modelsDir: models.modelsDir })).rejects.toThrow(/deepfilternet3 is not installed \(.*expected 7983136 bytes/);
  });

  it('loads the three graphs and the config from the archive in memory', async () => {
    const m = await loadDeepFilter(await install('load', archive));
    try {
      expect(m.cfg).toMatchObject({ sampleRate: 48000, fftSize: 960, hopSize: 480, nbErb: 32, nbDf: 96, dfOrder: 5, dfLookahead: 2, convLookahead: 2 });
      expect(m.sessions.enc.inputNames).toEqual(['feat_erb', 'feat_spec']);
      expect(m.sessions.erbDec.outputNames).toEqual(['m']);
      expect(m.sessions.dfDec.inputNames).toEqual(['emb', 'c0']);
    } finally {
      await m.release();
    }
  });

  it('at 48 kHz mono, blocks of any size give enhanceDf\'s output on the whole signal, at the input\'s length', async () => {
    const models = await install('mono', archive);
    const x = signal(1.3, 48000);
    const m = await loadDeepFilter(models);
    const whole = await enhanceDf(x, m.cfg, m.sessions);
    await m.release();
    // One window over the whole input: the stage adds nothing to what the core does.
    const stage = await DeepFilterStage.create(48000, 1, { models, windowFrames: 1e9 });
    const out = await processWhole([stage], { sampleRate: 48000, channels: [x] }, 7001);
    expect(out.channels[0]!.length).toBe(x.length);
    let maxDiff = 0;
    for (let i = 0; i < x.length; i++) maxDiff = Math.max(maxDiff, Math.abs(out.channels[0]![i]! - whole[i]!));
    expect(maxDiff).toBeLessThan(1e-6);
    expect(whole.some((v, i) => Math.abs(v - x[i]!) > 1e-3)).toBe(true);
  });

  it('at 16 kHz stereo, each channel is enhanced on its own and stays aligned, in bounded windows', async () => {
    const models = await install('stereo', archive);
    const left = signal(2.2, 16000, 3);
    const right = signal(2.2, 16000, 9);
    // Windows of 60 frames (0.6 s) warmed on 30: several network runs inside the input.
    const opts = { models, windowFrames: 60, contextFrames: 30 };
    const both = await processWhole([await DeepFilterStage.create(16000, 2, opts)], { sampleRate: 16000, channels: [left, right] }, 3000);
    const alone = await processWhole([await DeepFilterStage.create(16000, 1, opts)], { sampleRate: 16000, channels: [right] }, 5000);
    expect(both.channels.map((c) => c.length)).toEqual([left.length, right.length]);
    let maxDiff = 0;
    for (let i = 0; i < right.length; i++) maxDiff = Math.max(maxDiff, Math.abs(both.channels[1]![i]! - alone.channels[0]![i]!));
    expect(maxDiff).toBeLessThan(1e-6);
    // Aligned: the output correlates best with the input at lag 0 (the random-weight network keeps much of it).
    const corr = (lag: number) => {
      let s = 0;
      for (let i = 2000; i < left.length - 2000; i++) s += both.channels[0]![i]! * left[i + lag]!;
      return s;
    };
    const best = [-40, -20, -5, -1, 0, 1, 5, 20, 40].reduce((a, b) => (corr(b) > corr(a) ? b : a));
    expect(best).toBe(0);
  });

  it('level guard: input recorded very quietly is lifted for the network and lowered back; ordinary input is untouched', async () => {
    const x = signal(1.5, 48000, 5);
    expect(levelGuardGain([x], 48000)).toBe(1);
    expect(levelGuardGain([new Float32Array(48000)], 48000)).toBe(1);
    const quiet = x.map((v) => v * 0.01);
    const g = levelGuardGain([quiet], 48000);
    // Lifted to -25 dB (its 90th-percentile 10 ms level), a constant gain; never more than 40 dB.
    const p90 = (a: Float32Array) => {
      const lv: number[] = [];
      for (let i = 0; i + 480 <= a.length; i += 480) lv.push(10 * Math.log10(a.subarray(i, i + 480).reduce((s, v) => s + v * v, 0) / 480));
      return lv.sort((p, q) => p - q)[Math.floor(0.9 * (lv.length - 1))]!;
    };
    expect(p90(quiet.map((v) => v * g))).toBeCloseTo(-25, 6);
    expect(levelGuardGain([x.map((v) => v * 1e-4)], 48000)).toBeCloseTo(100, 6);
    expect(levelGuardGain([x.map((v) => v * 1e-6)], 48000)).toBe(1); // digital silence (under -100 dB) is left alone
    const models = await install('quiet', archive);
    const m = await loadDeepFilter(models);
    const expected = (await enhanceDf(quiet.map((v) => v * g), m.cfg, m.sessions)).map((v) => v / g);
    await m.release();
    const out = (await processWhole([await DeepFilterStage.create(48000, 1, { models, windowFrames: 1e9 })], { sampleRate: 48000, channels: [quiet] }, 4000)).channels[0]!;
    expect(out.length).toBe(quiet.length);
    let maxDiff = 0;
    for (let i = 0; i < out.length; i++) maxDiff = Math.max(maxDiff, Math.abs(out[i]! - expected[i]!));
    expect(maxDiff).toBeLessThan(1e-9);
  });

  it('an aborted task stops at the next window', async () => {
    const ctl = new AbortController();
    const stage = await DeepFilterStage.create(48000, 1, { models: await install('abort', archive), windowFrames: 20, contextFrames: 5, signal: ctl.signal });
    ctl.abort(new Error('task cancelled'));
    // More than the level guard's 20 s, so the push runs the network.
    await expect(stage.push({ sampleRate: 48000, channels: [signal(21, 48000)] })).rejects.toThrow('task cancelled');
    await stage.release();
  });

  it('an archive without a graph, or of another model, is refused with the reason, and auto then runs the next denoiser', async () => {
    const tarOf = (files: Record<string, string | Uint8Array>): Uint8Array => {
      // Minimal ustar writer: enough for a refusal test.
      const parts: Buffer[] = [];
      for (const [name, body] of Object.entries(files)) {
        const data = Buffer.from(body);
        const h = Buffer.alloc(512);
        h.write(name, 0);
        h.write('0000644\0', 100);
        h.write(`${data.length.toString(8).padStart(11, '0')}\0`, 124);
        h.write('0', 156);
        h.write('ustar\x0000', 257);
        h.write('        ', 148);
        let sum = 0;
        for (const b of h) sum += b;
        h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
        parts.push(h, data, Buffer.alloc((512 - (data.length % 512)) % 512));
      }
      parts.push(Buffer.alloc(1024));
      return gzipSync(Buffer.concat(parts));
    };
    const noDf = await install('no-df', tarOf({ 'tmp/export/config.ini': '[train]\nmodel = deepfilternet3\n', 'tmp/export/enc.onnx': 'x' }));
    await expect(loadDeepFilter(noDf)).rejects.toThrow(/config\.ini \[df\] sr/);
    const dfn2 = await install('dfn2', tarOf({ 'tmp/export/config.ini': '[train]\nmodel = deepfilternet2\n' }));
    await expect(loadDeepFilter(dfn2)).rejects.toThrow(/only deepfilternet3 exports are supported/);
    const evil = await install('evil', tarOf({ '../config.ini': 'x' }));
    await expect(loadDeepFilter(evil)).rejects.toThrow(/leaves the archive/);
    // With auto, the verified archive that will not load is one more problem: RNNoise runs (nothing else installed).
    expect(decideDenoiser('auto', { dtln: false, gtcrn: false, deepfilternet3: true }, null).kind).toBe('deepfilternet3');
    const made = await createChosenDenoiser('auto', { sampleRate: 16000, channels: 1, models: dfn2 }, null, false);
    expect(made.kind).toBe('rnnoise');
    expect(made.why).toMatch(/^auto: DeepFilterNet3 could not be used: config\.ini: \[train\] model is "deepfilternet2".*; no other neural denoiser installed; RNNoise \(built in\)$/);
  });

  it('auto and ENHANCE_DENOISER=deepfilternet3 run it when it verifies', async () => {
    const models = await install('chosen', archive);
    const auto = await createChosenDenoiser('auto', { sampleRate: 44100, channels: 2, models }, 0.1, false);
    expect([auto.kind, auto.why, auto.stage.name]).toEqual(['deepfilternet3', 'auto: DeepFilterNet3, 48 kHz full band', 'deepfilternet3']);
    const forced = await createChosenDenoiser('deepfilternet3', { sampleRate: 44100, channels: 1, models }, null, false);
    expect([forced.kind, forced.why]).toEqual(['deepfilternet3', 'ENHANCE_DENOISER=deepfilternet3']);
    for (const s of [auto.stage, forced.stage]) await s.flush();
  });
});

/** The published archive where a copy is on this machine (DFN3_ARCHIVE=path; see docs/models.md). */
const real = process.env.DFN3_ARCHIVE;
describe.skipIf(!real || !existsSync(real))('the published DeepFilterNet3 archive', () => {
  it('verifies against the built-in catalog and loads', async () => {
    const modelsDir = join(dir, 'real');
    await mkdir(join(modelsDir, 'deepfilternet3'), { recursive: true });
    await writeFile(join(modelsDir, 'deepfilternet3', DFN3_ARCHIVE), readFileSync(real!));
    expect(deepFilterAvailable(modelsDir)).toBe(true);
    const m = await loadDeepFilter(modelsDir);
    expect(m.cfg).toMatchObject({ sampleRate: 48000, fftSize: 960, hopSize: 480, nbErb: 32, nbDf: 96, dfOrder: 5, dfLookahead: 2, convLookahead: 2, normTau: 1, postFilter: false });
    await m.release();
    expect(entry.files[0]!.sizeBytes).toBe(readFileSync(real!).length);
  });
});
