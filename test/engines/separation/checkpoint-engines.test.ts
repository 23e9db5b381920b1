/**
 * The separation engine over the authors' checkpoint files: the tiny golden HTDemucs (.th and safetensors, 4 and 6
 * sources) and RoFormers (BS, Mel-Band), installed under the built-in catalog's names with a catalog pinned to their
 * real bytes. The stages themselves are proved against the reference code (test/engines/reference/); here the engine
 * around them is: routes and labels, input scaling and back, the bag's weighting, composition and the residual stem,
 * load failures of verified-but-hostile files, and the graph built in memory (nothing written into MODELS_DIR, which
 * may be read-only).
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AudioData } from '../../../src/media/audio.js';
import { collectingSink, outputStems, sourceFromAudio } from '../../../src/engines/separation/engine.js';
import { ModelLoadError, NeuralSeparationEngine } from '../../../src/engines/separation/neural.js';
import { checkpointPresets } from '../../../src/engines/separation/onnx/checkpoint-presets.js';
import { findPreset, presetPath, type MdxPreset } from '../../../src/engines/separation/onnx/presets.js';
import { loadRoformer } from '../../../src/engines/separation/onnx/roformer.js';
import { SelectingSeparationEngine } from '../../../src/engines/separation/select.js';
import type { ModelEntry } from '../../../src/models/catalog.js';
import { presetCatalog } from '../../fixtures/pinned-catalog.js';
import { buildTinyMdxModel, writeModel } from '../../fixtures/separation-models.js';
import { writeZip } from '../../helpers/hostile-files.js';
import { demucsDirect, GOLDEN, installEntry, meanStd, mixture, peakScale, rel, roformerDirect, sumError, type Install } from './checkpoint-fixtures.js';

let dir: string;
const ctx = () => ({ tmpDir: tmpdir(), signal: new AbortController().signal, onProgress: () => {} });
const engineOver = (catalog: ModelEntry[], extra: ReturnType<typeof findPreset>[] = []) =>
  new NeuralSeparationEngine({ modelsDir: dir, catalog, presets: [...checkpointPresets(catalog), ...extra.filter((p) => p !== undefined)], threads: 1 });

async function separate(engine: NeuralSeparationEngine, mix: AudioData, modelType: number) {
  const sink = collectingSink();
  const run = await engine.separate(sourceFromAudio(mix, 8192), modelType, ctx(), sink);
  return { run, stems: sink.result() };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'soundry-ckpt-engines-'));
});
afterAll(async () => rm(dir, { recursive: true, force: true }));

const DEMUCS = [
  { entry: 'htdemucs-th', files: { '955717e8-8726e21a.th': 'htdemucs/htdemucs-fd84e9d2.th' }, types: [501, 340, 360] },
  { entry: 'htdemucs-safetensors', files: { '955717e8.safetensors': 'htdemucs/htdemucs.safetensors' }, types: [501, 340, 360] },
  { entry: 'htdemucs_6s-th', files: { '5c90dfd2-34c22ccb.th': 'htdemucs_6s/htdemucs_6s-4c3fbcff.th' }, types: [320, 380, 390] },
  { entry: 'htdemucs_6s-safetensors', files: { '5c90dfd2.safetensors': 'htdemucs_6s/htdemucs_6s.safetensors' }, types: [320, 380, 390] },
] as const;

describe('HTDemucs from the authors\' checkpoints through the engine', () => {
  for (const c of DEMUCS) {
    it(`${c.entry}: routes ${c.types.join('/')}, and each stem is DemucsStage's on the mean/std-normalised input`, async () => {
      const catalog = [await installEntry(dir, c.entry, c.files as Install)];
      const engine = engineOver(catalog);
      const mix = mixture(1.3, 0.8);
      const want = await demucsDirect(Object.values(c.files)[0]!, mix);
      try {
        for (const t of c.types) {
          expect(engine.route(t)?.label).toBe(`onnx-htdemucs:${c.entry}`);
          const { run, stems } = await separate(engine, mix, t);
          expect(run.engine).toBe(`onnx-htdemucs:${c.entry}`);
          const names = outputStems(t);
          expect(Object.keys(stems).sort()).toEqual([...names].sort());
          for (const s of names.slice(0, -1)) expect(rel(stems[s]!.channels, want[s]!), `${t} ${s}`).toBeLessThan(1e-5);
          expect(sumError(mix, stems)).toBeLessThan(1e-5);
        }
      } finally {
        await engine.dispose();
      }
    }, 120_000);
  }

  it('the engine really normalises: a mixture with a DC offset and a large level gives the same stems per unit input', async () => {
    // Demucs is not scale-invariant, so skipping the normalisation would change the stems' shape, not only their size.
    const catalog = [await installEntry(dir, 'htdemucs-th', { '955717e8-8726e21a.th': 'htdemucs/htdemucs-fd84e9d2.th' })];
    const engine = engineOver(catalog);
    const base = mixture(1, 0.5, 11);
    const loud: AudioData = { sampleRate: 44100, channels: base.channels.map((c) => c.map((v) => 3 * v + 0.2)) };
    try {
      const a = (await separate(engine, base, 501)).stems;
      const b = (await separate(engine, loud, 501)).stems;
      const sb = meanStd(loud);
      const sa = meanStd(base);
      // stems(loud) = (stems(base) - mean_a) / std_a * std_b + mean_b, exactly what normalisation implies.
      for (const s of ['drums', 'bass', 'vocals']) {
        const mapped = a[s]!.channels.map((c) => c.map((v) => ((v - sa.mean) / sa.std) * sb.std + sb.mean));
        expect(rel(b[s]!.channels, mapped), s).toBeLessThan(1e-4);
      }
    } finally {
      await engine.dispose();
    }
  }, 120_000);
});

/** The safetensors copy with every decoder weight negated (fp16 sign bit): another network with the same sources. */
async function perturbedSafetensors(): Promise<Buffer> {
  const bytes = Buffer.from(await readFile(join(GOLDEN, 'htdemucs/htdemucs.safetensors')));
  const n = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + n).toString('utf8')) as Record<string, { dtype?: string; data_offsets?: [number, number] }>;
  let flipped = 0;
  for (const [key, t] of Object.entries(header)) {
    if (!key.includes('decoder') || t.dtype !== 'F16' || !t.data_offsets) continue;
    for (let i = 8 + n + t.data_offsets[0] + 1; i < 8 + n + t.data_offsets[1]; i += 2) bytes[i]! ^= 0x80;
    flipped++;
  }
  if (flipped === 0) throw new Error('no fp16 decoder tensor to perturb');
  return bytes;
}

describe('a bag of HTDemucs networks (htdemucs_ft\'s BagOfModels)', () => {
  const bags = [
    { as: 'bag-split', weights: [[1, 0, 1, 0], [0, 1, 0, 1]] },
    { as: 'bag-mean', weights: [[3, 1, 1, 0], [1, 1, 1, 1]] },
  ];
  for (const bag of bags) {
    it(`${bag.as}: each source is the weighted mean of the networks' estimates, weights ${JSON.stringify(bag.weights)}`, async () => {
      const other = await perturbedSafetensors();
      const entry = await installEntry(dir, 'htdemucs_ft-th', { 'f7e0c4bc-ba3fe64a.th': 'htdemucs/htdemucs-fd84e9d2.th', 'd12395a8.safetensors': other }, {
        models: [{ signature: 'f7e0c4bc', file: 'f7e0c4bc-ba3fe64a.th' }, { signature: 'd12395a8', file: 'd12395a8.safetensors' }],
        bagWeights: bag.weights,
      }, bag.as);
      const engine = engineOver([entry]);
      const mix = mixture(1.2, 0.7, 5);
      const a = await demucsDirect('htdemucs/htdemucs-fd84e9d2.th', mix);
      const b = await demucsDirect(other, mix);
      try {
        expect(engine.route(501)?.label).toBe(`onnx-htdemucs:${bag.as}`);
        const { run, stems } = await separate(engine, mix, 501);
        expect(run.engine).toBe(`onnx-htdemucs:${bag.as}`);
        ['drums', 'bass', 'other', 'vocals'].forEach((s, k) => {
          // The two networks must disagree, or the weighting is not tested.
          expect(rel(a[s]!, b[s]!), `networks differ on ${s}`).toBeGreaterThan(0.05);
          if (s === 'other') return; // 501's other is the residual
          const [wa, wb] = [bag.weights[0]![k]!, bag.weights[1]![k]!];
          const want = a[s]!.map((c, ch) => c.map((v, i) => (wa * v + wb * b[s]![ch]![i]!) / (wa + wb)));
          expect(rel(stems[s]!.channels, want), s).toBeLessThan(1e-5);
        });
        expect(sumError(mix, stems)).toBeLessThan(1e-5);
      } finally {
        await engine.dispose();
      }
    }, 120_000);
  }
});

const ROFORMERS = [
  { entry: 'bs-roformer-viperx-1297', files: { 'model_bs_roformer_ep_317_sdr_12.9755.ckpt': 'roformer_bs/model.ckpt', 'model_bs_roformer_ep_317_sdr_12.9755.yaml': 'roformer_bs/config.yaml' }, golden: 'roformer_bs' },
  { entry: 'mel-band-roformer-kim', files: { 'MelBandRoformer.ckpt': 'roformer_mel/model.ckpt', 'config_vocals_mel_band_roformer_kj.yaml': 'roformer_mel/config.yaml' }, golden: 'roformer_mel' },
] as const;
const kara = findPreset('UVR_MDXNET_KARA_2') as MdxPreset;

describe('RoFormers from their checkpoints through the engine', () => {
  for (const c of ROFORMERS) {
    it(`${c.entry}: 350's vocals are RoformerStage's on the peak-limited input, scaled back (a loud and a quiet input)`, async () => {
      const catalog = [await installEntry(dir, c.entry, c.files as Install)];
      const engine = engineOver(catalog);
      try {
        expect(engine.route(350)?.label).toBe(`onnx-roformer:${c.entry}`);
        // The RoFormers' band split starts with an RMS norm, so their masks hardly depend on the input's level: the
        // comparison below proves the stems are scaled back consistently, not the 0.9 itself (an engine limiting at
        // 0.8 passes it too, measured); the route's declared scaling is what says audio-separator's rule applies.
        expect(engine.route(350)?.scaling).toBe('peak');
        for (const peak of [1.6, 0.5]) {
          const mix = mixture(0.5, peak, 3);
          // The loud input is scaled by 0.9 / peak on the way in and back on the way out; the quiet one not at all.
          expect(peakScale(mix).std).toBeCloseTo(peak > 0.9 ? peak / 0.9 : 1, 6);
          const want = await roformerDirect(`${c.golden}/model.ckpt`, `${c.golden}/config.yaml`, mix);
          const { run, stems } = await separate(engine, mix, 350);
          expect(run.engine).toBe(`onnx-roformer:${c.entry}`);
          expect(Object.keys(stems).sort()).toEqual(['remainder', 'vocals']);
          expect(rel(stems.vocals!.channels, want.vocals!), `peak ${peak}`).toBeLessThan(1e-5);
          expect(sumError(mix, stems)).toBeLessThan(1e-5);
        }
      } finally {
        await engine.dispose();
      }
    }, 120_000);

    it(`${c.entry} + a karaoke MDX model: 490's lead and backing split the RoFormer's vocals, and all sum to the mix`, async () => {
      const catalog: ModelEntry[] = [await installEntry(dir, c.entry, c.files as Install)];
      await writeModel(presetPath(dir, kara), buildTinyMdxModel(kara.dimF, kara.dimT, 0.25));
      catalog.push(...presetCatalog(dir, [kara]));
      const engine = engineOver(catalog, [kara]);
      const mix = mixture(0.6, 1.3, 9);
      try {
        expect(engine.route(490)?.label).toBe(`onnx-roformer:${c.entry}+onnx-mdx:UVR_MDXNET_KARA_2`);
        const want = await roformerDirect(`${c.golden}/model.ckpt`, `${c.golden}/config.yaml`, mix);
        const { run, stems } = await separate(engine, mix, 490);
        expect(run.engine).toBe(`onnx-roformer:${c.entry}+onnx-mdx:UVR_MDXNET_KARA_2`);
        expect(Object.keys(stems).sort()).toEqual(['backing_vocals', 'lead_vocals', 'other']);
        const voice = stems.lead_vocals!.channels.map((ch, i) => ch.map((v, k) => v + stems.backing_vocals!.channels[i]![k]!));
        expect(rel(voice, want.vocals!)).toBeLessThan(1e-5);
        // The karaoke model really ran: the tiny gain model keeps about a quarter of the vocals as backing.
        const power = (xs: readonly Float32Array[]) => xs.reduce((a, x) => a + x.reduce((b, v) => b + v * v, 0), 0);
        const share = Math.sqrt(power(stems.backing_vocals!.channels) / power(want.vocals!));
        expect(share).toBeGreaterThan(0.05);
        expect(share).toBeLessThan(0.4);
        expect(sumError(mix, stems)).toBeLessThan(1e-5);
      } finally {
        await engine.dispose();
      }
    }, 120_000);
  }
});

// Pickle opcodes for a hand-made hostile package: GLOBAL posix.system, called with a shell command (REDUCE).
const pickleStr = (s: string) => {
  const body = Buffer.from(s, 'utf8');
  const len = Buffer.alloc(4);
  len.writeUInt32LE(body.length);
  return Buffer.concat([Buffer.from([0x58]), len, body]);
};
const hostileTh = (marker: string) => writeZip([
  { name: 'archive/data.pkl', data: Buffer.concat([Buffer.from([0x80, 2]), Buffer.from('cposix\nsystem\n', 'latin1'), Buffer.from([0x28]), pickleStr(`touch ${marker}`), Buffer.from([0x74, 0x52, 0x2e])]) },
  { name: 'archive/byteorder', data: Buffer.from('little') },
]);

describe('a checkpoint the catalog vouches for but that is broken or hostile', () => {
  const cases = [
    { what: 'truncated .th', entry: 'htdemucs-th', file: '955717e8-8726e21a.th', modelType: 340, why: /not a readable PyTorch checkpoint: .*truncated/, bytes: async () => (await readFile(join(GOLDEN, 'htdemucs/htdemucs-fd84e9d2.th'))).subarray(0, 150_000) },
    { what: 'pickle calling posix.system', entry: 'htdemucs-th', file: '955717e8-8726e21a.th', modelType: 501, why: /asks to call posix\.system.*never runs code/, bytes: async (marker: string) => hostileTh(marker) },
    { what: 'truncated RoFormer .ckpt', entry: 'mel-band-roformer-kim', file: 'MelBandRoformer.ckpt', modelType: 350, why: /not a readable PyTorch checkpoint: .*truncated/, bytes: async () => (await readFile(join(GOLDEN, 'roformer_mel/model.ckpt'))).subarray(0, 400_000) },
  ];
  for (const c of cases) {
    it(`${c.what}: separate() fails with ModelLoadError naming the file, having run nothing; the selecting engine falls back`, async () => {
      const models = await mkdtemp(join(tmpdir(), 'soundry-ckpt-hostile-'));
      const marker = join(models, 'ran-code');
      try {
        const files: Install = { [c.file]: await c.bytes(marker) };
        if (c.entry === 'mel-band-roformer-kim') files['config_vocals_mel_band_roformer_kj.yaml'] = 'roformer_mel/config.yaml';
        const entry = await installEntry(models, c.entry, files);
        const engine = new NeuralSeparationEngine({ modelsDir: models, catalog: [entry], presets: checkpointPresets([entry]), threads: 1 });
        // Verified (size and sha256 match the catalog), so the route is taken; the load is what fails.
        expect(engine.supports(c.modelType)).toBe(true);
        const sink = collectingSink();
        const err = await engine.separate(sourceFromAudio(mixture(0.3, 0.5)), c.modelType, ctx(), sink).then(() => undefined, (e: unknown) => e);
        expect(err).toBeInstanceOf(ModelLoadError);
        expect((err as ModelLoadError).file).toBe(join(models, c.entry, c.file));
        expect((err as Error).message).toContain(c.file);
        expect((err as Error).message).toMatch(c.why);
        expect(sink.result()).toEqual({});
        await engine.dispose();
        // The built-in presets know these names: the site's catalog alone makes the hostile file "installed".
        const selecting = new SelectingSeparationEngine({ modelsDir: models, catalog: [entry], choice: 'auto', threads: 1 });
        expect(selecting.pick(c.modelType).id).toBe('onnx');
        const run = await selecting.separate(sourceFromAudio(mixture(1, 0.5)), c.modelType, ctx(), collectingSink());
        expect(run.engine).toBe('builtin-dsp');
        expect(run.note).toContain(join(models, c.entry, c.file));
        expect(run.note).toMatch(/could not be loaded.*built-in engine/);
        expect(existsSync(marker)).toBe(false);
      } finally {
        await rm(models, { recursive: true, force: true });
      }
    }, 120_000);
  }
});

async function writable(path: string): Promise<boolean> {
  const probe = join(path, '.probe');
  try {
    await writeFile(probe, '');
    await rm(probe);
    return true;
  } catch {
    return false;
  }
}

/**
 * Makes `path` read-only the way a site mounts MODELS_DIR: by permissions, or (as root, whom permissions do not
 * stop) by a read-only bind mount. Returns how to undo it, or undefined where neither takes effect here.
 */
async function makeReadOnly(path: string): Promise<(() => Promise<void>) | undefined> {
  await chmod(path, 0o555);
  if (!(await writable(path))) return () => chmod(path, 0o755);
  await chmod(path, 0o755);
  if (process.getuid?.() !== 0) return undefined;
  try {
    execFileSync('mount', ['--bind', '-o', 'ro', path, path], { stdio: 'ignore' });
  } catch {
    return undefined;
  }
  const undo = async () => void execFileSync('umount', [path], { stdio: 'ignore' });
  if (await writable(path)) {
    await undo();
    return undefined;
  }
  return undo;
}

describe('the graph built in memory: nothing is written into the models folder', () => {
  const cases = [
    { entry: 'htdemucs-th', files: { '955717e8-8726e21a.th': 'htdemucs/htdemucs-fd84e9d2.th' }, modelType: 340, stem: 'drums' },
    { entry: 'mel-band-roformer-kim', files: { 'MelBandRoformer.ckpt': 'roformer_mel/model.ckpt', 'config_vocals_mel_band_roformer_kj.yaml': 'roformer_mel/config.yaml' }, modelType: 350, stem: 'vocals' },
  ] as const;
  for (const c of cases) {
    it(`${c.entry}: a read-only folder never written to works from the first task, the same as a writable one, which stays as installed`, async (t) => {
      const models = await mkdtemp(join(tmpdir(), 'soundry-ckpt-ro-'));
      const undo: Array<() => Promise<void>> = [];
      try {
        const entry = await installEntry(models, c.entry, c.files as Install);
        const folder = join(models, c.entry);
        const installed = (await readdir(folder)).sort();
        const run = async () => {
          const engine = new NeuralSeparationEngine({ modelsDir: models, catalog: [entry], presets: checkpointPresets([entry]), threads: 1 });
          try {
            return (await separate(engine, mixture(0.4, 0.5), c.modelType)).stems;
          } finally {
            await engine.dispose();
          }
        };
        const ro = await makeReadOnly(folder);
        if (!ro) return t.skip('cannot make a folder read-only here (root without mount)');
        undo.push(ro);
        const cold = await run();
        expect((await readdir(folder)).sort()).toEqual(installed);
        await ro();
        undo.pop();
        const writable = await run();
        expect(writable[c.stem]!.channels).toEqual(cold[c.stem]!.channels);
        // Only the verification marker, remembered once the folder can take it; no graph, stamp or temporary file.
        expect((await readdir(folder)).sort()).toEqual([...installed, '.verified.json'].sort());
      } finally {
        for (const u of undo.reverse()) await u();
        await rm(models, { recursive: true, force: true });
      }
    }, 120_000);
  }
});

describe('two engines of one process (worker threads) loading the same checkpoint at once', () => {
  const cases = [
    { entry: 'htdemucs-th', files: { '955717e8-8726e21a.th': 'htdemucs/htdemucs-fd84e9d2.th' }, modelType: 340, stem: 'drums' },
    { entry: 'mel-band-roformer-kim', files: { 'MelBandRoformer.ckpt': 'roformer_mel/model.ckpt', 'config_vocals_mel_band_roformer_kj.yaml': 'roformer_mel/config.yaml' }, modelType: 350, stem: 'vocals' },
  ] as const;
  for (const c of cases) {
    it(`${c.entry}: every task on a cold models folder gets the model, the same stems, and the folder stays as installed`, async () => {
      const models = await mkdtemp(join(tmpdir(), 'soundry-ckpt-race-'));
      try {
        const entry = await installEntry(models, c.entry, c.files as Install);
        const engines = [0, 1, 2].map(() => new NeuralSeparationEngine({ modelsDir: models, catalog: [entry], presets: checkpointPresets([entry]), threads: 1 }));
        const mix = mixture(0.3, 0.5);
        const runs = await Promise.allSettled(engines.map((e) => separate(e, mix, c.modelType)));
        await Promise.all(engines.map((e) => e.dispose()));
        const failed = runs.flatMap((r) => (r.status === 'rejected' ? [(r.reason as Error).message] : []));
        expect(failed).toEqual([]);
        const stems = runs.map((r) => (r as PromiseFulfilledResult<Awaited<ReturnType<typeof separate>>>).value.stems[c.stem]!.channels);
        expect(stems[1]).toEqual(stems[0]);
        expect(stems[2]).toEqual(stems[0]);
        expect((await readdir(join(models, c.entry))).sort()).toEqual(['.verified.json', ...Object.keys(c.files)].sort());
      } finally {
        await rm(models, { recursive: true, force: true });
      }
    }, 120_000);
  }
});

describe('a verified checkpoint that is not the network its catalog entry describes', () => {
  it('a 4-source HTDemucs pinned under the 6-source entry: a load error naming the file and both source lists', async () => {
    const models = await mkdtemp(join(tmpdir(), 'soundry-ckpt-wrong-'));
    try {
      const entry = await installEntry(models, 'htdemucs_6s-th', { '5c90dfd2-34c22ccb.th': 'htdemucs/htdemucs-fd84e9d2.th' });
      const engine = new NeuralSeparationEngine({ modelsDir: models, catalog: [entry], presets: checkpointPresets([entry]), threads: 1 });
      const err = await separate(engine, mixture(0.3, 0.5), 380).then(() => undefined, (e: unknown) => e);
      await engine.dispose();
      expect(err).toBeInstanceOf(ModelLoadError);
      expect((err as Error).message).toContain(join(models, 'htdemucs_6s-th', '5c90dfd2-34c22ccb.th'));
      expect((err as Error).message).toMatch(/drums, bass, other, vocals.*drums, bass, other, vocals, guitar, piano/);
    } finally {
      await rm(models, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('a multi-instrument RoFormer (the MVSep Mega entry) running only the heads a task needs', () => {
  // The tiny Mel-Band RoFormer has two heads (vocals, other); the test entry calls head 1 piano and head 0 guitar.
  const files = { 'mvsep_mega_model_bs_roformer_53_stems_v1.ckpt': 'roformer_mel/model.ckpt', 'mvsep_mega_model_bs_roformer_53_stems.yaml': 'roformer_mel/config.yaml' };
  const meta = { stems: ['piano', 'guitar'], heads: { piano: 1, guitar: 0 } };

  it('380 and 390 route to it; each stem is that head of RoformerStage, scaled back; 491 does not', async () => {
    const catalog = [await installEntry(dir, 'bs-roformer-mvsep-mega-53', files, meta)];
    const engine = engineOver(catalog);
    const mix = mixture(0.5, 1.4, 21);
    const all = await roformerDirect('roformer_mel/model.ckpt', 'roformer_mel/config.yaml', mix);
    try {
      expect(engine.route(491)).toBeUndefined();
      for (const [t, stem, head] of [[380, 'piano', 'other'], [390, 'guitar', 'vocals']] as const) {
        expect(engine.route(t)?.label).toBe('onnx-roformer:bs-roformer-mvsep-mega-53');
        const { run, stems } = await separate(engine, mix, t);
        expect(run.engine).toBe('onnx-roformer:bs-roformer-mvsep-mega-53');
        expect(Object.keys(stems).sort()).toEqual([stem, 'remainder'].sort());
        expect(rel(stems[stem]!.channels, all[head]!), `${t} ${stem}`).toBeLessThan(1e-5);
        expect(sumError(mix, stems)).toBeLessThan(1e-5);
      }
      // Nothing written beside the checkpoint; a graph for one head has that one head's mask output.
      const folder = join(dir, 'bs-roformer-mvsep-mega-53');
      expect((await readdir(folder)).sort()).toEqual(['.verified.json', ...Object.keys(files)].sort());
      const { session } = await loadRoformer(folder, 'mvsep_mega_model_bs_roformer_53_stems_v1.ckpt', 'mvsep_mega_model_bs_roformer_53_stems.yaml', { threads: 1, heads: [{ name: 'piano', index: 1 }] });
      const out = session.outputMetadata[0]!;
      expect(out.isTensor && out.shape[0]).toBe(1);
      await session.release();
    } finally {
      await engine.dispose();
    }
  }, 120_000);
});
