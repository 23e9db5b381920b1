import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AudioData } from '../../../src/media/audio.js';
import { collectingSink, sourceFromAudio, type AudioSource, type StemSink } from '../../../src/engines/separation/engine.js';
import { NeuralSeparationEngine } from '../../../src/engines/separation/neural.js';
import { NEURAL_PRESETS, findPreset, presetPath, type DemucsPreset, type MdxPreset } from '../../../src/engines/separation/onnx/presets.js';
import { SelectingSeparationEngine } from '../../../src/engines/separation/select.js';
import { presetCatalog } from '../../fixtures/pinned-catalog.js';
import { buildTinyDemucsModel, buildTinyMdxModel, buildTinySpectralCoreDemucsModel, buildTinyWaveformDemucsModel, writeModel } from '../../fixtures/separation-models.js';
import { MODEL_CATALOG } from '../../../src/models/catalog.js';

let dir: string;
const ctx = (signal = new AbortController().signal, progress: number[] = []) => ({ tmpDir: tmpdir(), signal, onProgress: (f: number) => progress.push(f) });

/** Tones well inside every model's band (above the 3 zeroed bins, below dim_f), so a gain model passes them. */
function tones(rate: number, seconds: number, channels = 2): AudioData {
  const n = Math.round(rate * seconds);
  return {
    sampleRate: rate,
    channels: Array.from({ length: channels }, (_, c) =>
      Float32Array.from({ length: n }, (_, i) => 0.3 * Math.sin((2 * Math.PI * (440 + 110 * c) * i) / rate) + 0.2 * Math.sin((2 * Math.PI * 1234 * i) / rate))),
  };
}

function maxErr(a: Float32Array, b: Float32Array, from = 0, to = a.length): number {
  let e = 0;
  for (let i = from; i < to; i++) e = Math.max(e, Math.abs(a[i]! - b[i]!));
  return e;
}

function sumOf(stems: Record<string, AudioData>, c: number, n: number): Float32Array {
  const s = new Float32Array(n);
  for (const st of Object.values(stems)) st.channels[c]!.forEach((v, i) => (s[i]! += v));
  return s;
}

const kim = findPreset('Kim_Vocal_2') as MdxPreset;
const inst = findPreset('UVR-MDX-NET-Inst_HQ_3') as MdxPreset;
const kara = findPreset('UVR_MDXNET_KARA_2') as MdxPreset;
const demucs4 = findPreset('htdemucs') as DemucsPreset;
const demucs6 = findPreset('htdemucs_6s') as DemucsPreset;
const openkara = findPreset('htdemucs-openkara') as DemucsPreset;
const openkaraFt = findPreset('htdemucs_ft-openkara') as DemucsPreset;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'soundry-onnx-sep-'));
  // Real signatures: MDX [batch, 4, dim_f, dim_t]; demucs [1,2,343980] + [1,4,2048,336].
  await writeModel(presetPath(dir, kim), buildTinyMdxModel(kim.dimF, kim.dimT, 0.5));
  await writeModel(presetPath(dir, kara), buildTinyMdxModel(kara.dimF, kara.dimT, 0.25));
  const spec = { segment: 343980, bins: 2048, frames: 336 };
  await writeModel(presetPath(dir, demucs4), buildTinyDemucsModel({ ...spec, timeGain: [0.1, 0.2, 0.3, 0.4], freqGain: [0, 0, 0, 0] }));
}, 60_000);
afterAll(async () => rm(dir, { recursive: true, force: true }));

describe('MDX-Net engine (tiny model with the UVR signature)', () => {
  it('350: a 0.5-gain model gives vocals = 0.5 * compensate * mix on in-band tones; stems sum to the mixture', async () => {
    const engine = new NeuralSeparationEngine({ modelsDir: dir, catalog: presetCatalog(dir), presets: [kim], threads: 1 });
    const mix = tones(44100, 13);
    const sink = collectingSink();
    const progress: number[] = [];
    const run = await engine.separate(sourceFromAudio(mix, 30000), 350, ctx(undefined, progress), sink);
    expect(run.engine).toBe('onnx-mdx:Kim_Vocal_2');
    const out = sink.result();
    expect(Object.keys(out).sort()).toEqual(['remainder', 'vocals']);
    const n = mix.channels[0]!.length;
    for (let c = 0; c < 2; c++) {
      const want = mix.channels[c]!.map((v) => v * 0.5 * kim.compensate);
      // Overlap-add of identical per-chunk results reconstructs the signal, chunk seams included.
      // The onset at t=0 is broadband and loses what lies outside the model's bins; the interior is exact.
      expect(maxErr(out.vocals!.channels[c]!, want, 8192, n - 8192)).toBeLessThan(2e-4);
      expect(maxErr(sumOf(out, c, n), mix.channels[c]!)).toBeLessThan(1e-6);
    }
    expect(progress.at(-1)).toBe(1);
    await engine.dispose();
  }, 120_000);

  it('mono 48 kHz input: resampled to 44.1 kHz and back, averaged to mono, still sums to the mixture', async () => {
    const engine = new NeuralSeparationEngine({ modelsDir: dir, catalog: presetCatalog(dir), presets: [kim], threads: 1 });
    const mix = tones(48000, 7, 1);
    const sink = collectingSink();
    await engine.separate(sourceFromAudio(mix, 40000), 350, ctx(), sink);
    const out = sink.result();
    const n = mix.channels[0]!.length;
    expect(out.vocals!.channels).toHaveLength(1);
    expect(out.vocals!.channels[0]!.length).toBe(n);
    expect(out.vocals!.sampleRate).toBe(48000);
    const want = mix.channels[0]!.map((v) => v * 0.5 * kim.compensate);
    expect(maxErr(out.vocals!.channels[0]!, want, 200, n - 200)).toBeLessThan(2e-3);
    expect(maxErr(sumOf(out, 0, n), mix.channels[0]!)).toBeLessThan(1e-6);
    await engine.dispose();
  }, 120_000);

  it('490: vocal model then karaoke model on the vocals; lead + backing + other = mix', async () => {
    const engine = new NeuralSeparationEngine({ modelsDir: dir, catalog: presetCatalog(dir), presets: [kim, kara], threads: 1 });
    const mix = tones(44100, 8);
    const sink = collectingSink();
    const run = await engine.separate(sourceFromAudio(mix), 490, ctx(), sink);
    expect(run.engine).toBe('onnx-mdx:Kim_Vocal_2+UVR_MDXNET_KARA_2');
    const out = sink.result();
    expect(Object.keys(out).sort()).toEqual(['backing_vocals', 'lead_vocals', 'other']);
    const n = mix.channels[0]!.length;
    const v = 0.5 * kim.compensate;
    const backing = v * 0.25 * kara.compensate;
    expect(maxErr(out.backing_vocals!.channels[0]!, mix.channels[0]!.map((x) => x * backing), 8192, n - 8192)).toBeLessThan(2e-4);
    expect(maxErr(out.lead_vocals!.channels[0]!, mix.channels[0]!.map((x) => x * (v - backing)), 8192, n - 8192)).toBeLessThan(2e-4);
    for (let c = 0; c < 2; c++) expect(maxErr(sumOf(out, c, n), mix.channels[c]!)).toBeLessThan(1e-6);
    await engine.dispose();
  }, 120_000);

  it('an aborted signal stops the run', async () => {
    const engine = new NeuralSeparationEngine({ modelsDir: dir, catalog: presetCatalog(dir), presets: [kim], threads: 1 });
    const ac = new AbortController();
    const sink: StemSink = { write: () => ac.abort() };
    await expect(engine.separate(sourceFromAudio(tones(44100, 20), 44100), 350, ctx(ac.signal), sink)).rejects.toThrow(/abort/i);
    await engine.dispose();
  }, 120_000);
});

describe('HTDemucs engine (tiny model with the demucs.onnx signature)', () => {
  it('501: per-source time-branch gains come back exactly through normalisation, shift and segments', async () => {
    const engine = new NeuralSeparationEngine({ modelsDir: dir, catalog: presetCatalog(dir), presets: [demucs4], threads: 1 });
    // Offset so the demucs mean/std normalisation matters.
    const mix = tones(44100, 17);
    mix.channels.forEach((c) => c.forEach((v, i) => (c[i] = v + 0.05)));
    const sink = collectingSink();
    const run = await engine.separate(sourceFromAudio(mix, 50000), 501, ctx(), sink);
    expect(run.engine).toBe('onnx-htdemucs:htdemucs');
    const out = sink.result();
    expect(Object.keys(out).sort()).toEqual(['bass', 'drums', 'other', 'vocals']);
    const n = mix.channels[0]!.length;
    // out_s = g_s * (x - m) / sd * sd + m = g_s * x + (1 - g_s) * m, with m the mean of the mono mix.
    let m = 0;
    for (let i = 0; i < n; i++) m += (mix.channels[0]![i]! + mix.channels[1]![i]!) / 2;
    m /= n;
    for (const [name, g] of [['drums', 0.1], ['bass', 0.2], ['vocals', 0.4]] as const) {
      expect(maxErr(out[name]!.channels[1]!, mix.channels[1]!.map((x) => g * x + (1 - g) * m))).toBeLessThan(1e-5);
    }
    for (let c = 0; c < 2; c++) expect(maxErr(sumOf(out, c, n), mix.channels[c]!)).toBeLessThan(1e-6);
    await engine.dispose();
  }, 180_000);

  it('320 on the 6-stem model: the frequency branch goes through _spec/_ispec and the triangle-weighted seams', async () => {
    const sixDir = await mkdtemp(join(tmpdir(), 'soundry-onnx-6s-'));
    const spec = { segment: 343980, bins: 2048, frames: 336 };
    // drums, bass, other, vocals, guitar, piano: guitar only from the frequency branch, piano from both.
    await writeModel(presetPath(sixDir, demucs6), buildTinyDemucsModel({ ...spec, timeGain: [0, 0, 0, 0, 0, 0.1], freqGain: [0, 0, 0, 0, 0.5, 0.2] }));
    const engine = new NeuralSeparationEngine({ modelsDir: sixDir, catalog: presetCatalog(sixDir), presets: [demucs6], threads: 1 });
    const mix = tones(44100, 12);
    const sink = collectingSink();
    const run = await engine.separate(sourceFromAudio(mix, 44100), 320, ctx(), sink);
    expect(run.engine).toBe('onnx-htdemucs:htdemucs_6s');
    const out = sink.result();
    expect(Object.keys(out).sort()).toEqual(['bass', 'drums', 'guitar', 'other', 'piano', 'vocals']);
    const n = mix.channels[0]!.length;
    const snr = (got: Float32Array, want: Float32Array) => {
      let e = 0;
      let p = 0;
      for (let i = 8192; i < n - 8192; i++) {
        e += (got[i]! - want[i]!) ** 2;
        p += want[i]! ** 2;
      }
      return 10 * Math.log10(p / e);
    };
    // Zero-mean tones: the normalisation mean is ~0, so stems are gain * mix.
    expect(snr(out.guitar!.channels[0]!, mix.channels[0]!.map((x) => 0.5 * x))).toBeGreaterThan(40);
    expect(snr(out.piano!.channels[1]!, mix.channels[1]!.map((x) => 0.3 * x))).toBeGreaterThan(40);
    for (let c = 0; c < 2; c++) expect(maxErr(sumOf(out, c, n), mix.channels[c]!)).toBeLessThan(1e-6);
    await engine.dispose();
    await rm(sixDir, { recursive: true, force: true });
  }, 180_000);

  it('picks the 4-stem model for 340/360/350 and leaves 320 (needs 6 stems) to the built-in engine', () => {
    const sel = new SelectingSeparationEngine({ modelsDir: dir, catalog: presetCatalog(dir), choice: 'auto', threads: 1 });
    expect(sel.pick(340).id).toBe('onnx');
    expect(sel.pick(320).id).toBe('builtin-dsp');
    expect(sel.pick(491).id).toBe('builtin-dsp');
    const neural = new NeuralSeparationEngine({ modelsDir: dir, catalog: presetCatalog(dir) });
    expect(neural.route(350)?.label).toBe('onnx-mdx:Kim_Vocal_2');
    expect(neural.route(360)?.label).toBe('onnx-htdemucs:htdemucs');
    expect(neural.route(320)).toBeUndefined();
    expect(new SelectingSeparationEngine({ modelsDir: dir, catalog: presetCatalog(dir), choice: 'builtin' }).pick(350).id).toBe('builtin-dsp');
    expect(new NeuralSeparationEngine({ modelsDir: dir, catalog: presetCatalog(dir), presets: [demucs4] }).route(350)?.label).toBe('onnx-htdemucs:htdemucs');
    expect(NEURAL_PRESETS.map((p) => p.name)).toContain(demucs6.name);
  });
});

describe('HTDemucs from the openkara-models release (spectral-core layout)', () => {
  it('501: the stand-in with the contract-v1 signature runs; the stems are its per-source gains and sum to the mix', async () => {
    const d = await mkdtemp(join(tmpdir(), 'soundry-onnx-openkara-'));
    try {
      const spec = { segment: 343980, bins: 2048, frames: 336 };
      // drums, bass, other, vocals: drums and vocals from the frequency branch (_spec/_ispec), bass from the time one.
      await writeModel(presetPath(d, openkara), buildTinySpectralCoreDemucsModel({ ...spec, timeGain: [0, 0.2, 0, 0], freqGain: [0.5, 0, 0, 0.25] }));
      const engine = new NeuralSeparationEngine({ modelsDir: d, catalog: presetCatalog(d) });
      expect(engine.route(501)?.label).toBe('onnx-htdemucs:htdemucs-openkara');
      expect(engine.route(340)?.label).toBe('onnx-htdemucs:htdemucs-openkara');
      expect(engine.route(320)).toBeUndefined();
      const mix = tones(44100, 9);
      const sink = collectingSink();
      const run = await new NeuralSeparationEngine({ modelsDir: d, catalog: presetCatalog(d), threads: 1 }).separate(sourceFromAudio(mix, 44100), 501, ctx(), sink);
      expect(run.engine).toBe('onnx-htdemucs:htdemucs-openkara');
      const out = sink.result();
      const n = mix.channels[0]!.length;
      // Zero-mean tones: stems are gain * mix away from the ends (the iSTFT's first and last n_fft samples).
      for (const [name, g] of [['drums', 0.5], ['bass', 0.2], ['vocals', 0.25]] as const) {
        expect(maxErr(out[name]!.channels[0]!, mix.channels[0]!.map((x) => g * x), 8192, n - 8192), name).toBeLessThan(2e-3);
      }
      for (let c = 0; c < 2; c++) expect(maxErr(sumOf(out, c, n), mix.channels[c]!)).toBeLessThan(1e-6);
    } finally {
      await rm(d, { recursive: true, force: true });
    }
  }, 180_000);

  it("with the built-in catalog: the authors' checkpoints are pulled (HTDemucs .th, the Mel-Band RoFormer for vocals), never an opt-in model", () => {
    const empty = join(dir, 'nothing-installed');
    const plan = (t: number, presets?: DemucsPreset[]) =>
      new NeuralSeparationEngine({ modelsDir: empty, catalog: MODEL_CATALOG, ...(presets ? { presets, pullOptIn: true } : {}) }).pullPlan(t).map((e) => e.name);
    for (const t of [501, 340, 360]) expect(plan(t), String(t)).toEqual(['htdemucs-th']);
    for (const t of [320, 380, 390]) expect(plan(t), String(t)).toEqual(['htdemucs_6s-th']);
    expect(plan(350)).toEqual(['mel-band-roformer-kim']);
    expect(plan(490)).toEqual(['mel-band-roformer-kim', 'UVR_MDXNET_KARA_2']);
    // Only the Mega RoFormer serves strings, wind and synthesizer, and its weights carry no licence: a site opts in.
    for (const t of [491, 492, 493]) expect(plan(t), String(t)).toEqual([]);
    // The fine-tuned bag is pulled only when it is the model asked for (SEPARATION_ENGINE=htdemucs_ft-openkara).
    expect(plan(501, [openkaraFt])).toEqual(['htdemucs_ft-openkara']);
    const entry = MODEL_CATALOG.find((m) => m.name === 'htdemucs-openkara')!;
    expect(entry.files).toEqual([expect.objectContaining({ path: openkara.file, sizeBytes: 209469333, sha256: 'c3395410b1319976683bc874d97461655a9ea6089bbb0f3bd163d3829db13d02' })]);
  });

  it('when both are installed the fine-tuned bag serves 501', async () => {
    const d = await mkdtemp(join(tmpdir(), 'soundry-onnx-openkara-ft-'));
    try {
      const bytes = buildTinySpectralCoreDemucsModel({ segment: 343980, bins: 2048, frames: 336, timeGain: [0.1, 0.2, 0.3, 0.4], freqGain: [0, 0, 0, 0] });
      await writeModel(presetPath(d, openkara), bytes);
      await writeModel(presetPath(d, openkaraFt), bytes);
      expect(new NeuralSeparationEngine({ modelsDir: d, catalog: presetCatalog(d) }).route(501)?.label).toBe('onnx-htdemucs:htdemucs_ft-openkara');
    } finally {
      await rm(d, { recursive: true, force: true });
    }
  });
});

describe('a site-pinned 6-stem export with the STFT inside the graph', () => {
  it('serves 320, 380 and 390 under the htdemucs_6s name: the stage reads the layout from the graph', async () => {
    const d = await mkdtemp(join(tmpdir(), 'soundry-onnx-6s-wave-'));
    try {
      // drums, bass, other, vocals, guitar, piano
      await writeModel(presetPath(d, demucs6), buildTinyWaveformDemucsModel({ segment: 343980, gain: [0.1, 0.1, 0, 0.2, 0.3, 0.25] }));
      const engine = new NeuralSeparationEngine({ modelsDir: d, catalog: presetCatalog(d), threads: 1 });
      for (const t of [320, 380, 390]) expect(engine.route(t)?.label, String(t)).toBe('onnx-htdemucs:htdemucs_6s');
      const mix = tones(44100, 9);
      const sink = collectingSink();
      const run = await engine.separate(sourceFromAudio(mix, 30000), 320, ctx(), sink);
      expect(run.engine).toBe('onnx-htdemucs:htdemucs_6s');
      const out = sink.result();
      const n = mix.channels[0]!.length;
      for (const [name, g] of [['guitar', 0.3], ['piano', 0.25], ['vocals', 0.2]] as const) {
        expect(maxErr(out[name]!.channels[1]!, mix.channels[1]!.map((x) => g * x)), name).toBeLessThan(1e-4);
      }
      for (let c = 0; c < 2; c++) expect(maxErr(sumOf(out, c, n), mix.channels[c]!)).toBeLessThan(1e-6);
      await engine.dispose();
    } finally {
      await rm(d, { recursive: true, force: true });
    }
  }, 180_000);
});

describe('installed means verified', () => {
  it('an LFS pointer, a truncated or a foreign file at the model path is never routed; a verified one is', async () => {
    const d = await mkdtemp(join(tmpdir(), 'soundry-onnx-verify-'));
    try {
      await writeModel(presetPath(d, kim), buildTinyMdxModel(kim.dimF, kim.dimT, 0.5));
      const catalog = presetCatalog(d, [kim]);
      const good = await readFile(presetPath(d, kim));
      const route = () => new NeuralSeparationEngine({ modelsDir: d, catalog, presets: [kim], threads: 1 }).route(350)?.label;
      expect(route()).toBe('onnx-mdx:Kim_Vocal_2');
      const lfs = `version https://git-lfs.github.com/spec/v1\noid sha256:${'a'.repeat(64)}\nsize ${good.length}\n`;
      for (const bad of [Buffer.from(lfs), good.subarray(0, good.length - 1), Buffer.from(good).fill(7, 20, 60)]) {
        await writeFile(presetPath(d, kim), bad);
        expect(route(), `${bad.length} bytes`).toBeUndefined();
      }
      // The built-in catalog's real checksum never matches a stand-in: not routed without the site's entry.
      await writeFile(presetPath(d, kim), good);
      expect(new NeuralSeparationEngine({ modelsDir: d, presets: [kim] }).route(350)).toBeUndefined();
      expect(route()).toBe('onnx-mdx:Kim_Vocal_2');
    } finally {
      await rm(d, { recursive: true, force: true });
    }
  });
});

describe('long input', () => {
  it('streams 20 minutes through an MDX model with flat memory', async () => {
    // A small MDX geometry keeps the run short; the streaming code is the same as for the real sizes.
    const small: MdxPreset = { family: 'mdx', name: 'small', file: 'small.onnx', nFft: 2048, dimF: 512, dimT: 32, hop: 1024, compensate: 1, primary: 'vocals' };
    await writeModel(presetPath(dir, small), buildTinyMdxModel(small.dimF, small.dimT, 0.5));
    const engine = new NeuralSeparationEngine({ modelsDir: dir, catalog: presetCatalog(dir, [small]), presets: [small], threads: 1 });
    const rate = 44100;
    const total = rate * 60 * 20;
    const block = rate * 10;
    const source: AudioSource = {
      sampleRate: rate,
      channelCount: 2,
      totalFrames: total,
      async *blocks() {
        for (let at = 0; at < total; at += block) {
          const n = Math.min(block, total - at);
          const l = Float32Array.from({ length: n }, (_, i) => 0.3 * Math.sin((2 * Math.PI * 440 * (at + i)) / rate));
          yield { sampleRate: rate, channels: [l, l] };
        }
      },
    };
    let frames = 0;
    let peak = 0;
    let base = 0;
    const sink: StemSink = {
      write(start, stems) {
        expect(start).toBe(frames);
        frames += stems.vocals!.channels[0]!.length;
        const heap = process.memoryUsage().heapUsed;
        if (frames > rate * 60 && !base) base = heap;
        peak = Math.max(peak, heap);
      },
    };
    await engine.separate(source, 350, ctx(), sink);
    expect(frames).toBe(total);
    // 20 minutes of stereo float32 is 420 MB per stem; growth stays far below one minute of it.
    expect(peak - base).toBeLessThan(64 * 1024 * 1024);
    await engine.dispose();
  }, 300_000);
});
