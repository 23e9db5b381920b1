import type { RealFft } from '../../../media/dsp/fft.js';
import { BagStage } from './bag.js';
import type { CheckpointDemucsPreset, RoformerPreset } from './checkpoint-presets.js';
import { DemucsStage, type DemucsOptions } from './htdemucs.js';
import type { LoadedHtdemucs } from './htdemucs-loader.js';
import { MdxStage, type MdxOptions } from './mdx.js';
import type { Stereo, StereoStage } from './overlap-add.js';
import type { DemucsPreset, MdxPreset, NeuralPreset } from './presets.js';
import type { LoadedRoformer } from './roformer.js';
import type { ort } from './session.js';
import { PlanarFifo } from './stream.js';

export type { StereoStage } from './overlap-add.js';

/**
 * Which installed models serve which model_type, and how their stems become the stems. A route's stage runs
 * at the model rate in stereo; `compose` then works at the input rate on the model's stems and the mixture, and the
 * engine puts whatever the composed stems miss into the last stem (`other` / `remainder`).
 */
export interface StageDeps {
  session(p: NeuralPreset): Promise<ort.InferenceSession>;
  /** Network `model` of a checkpoint preset (a bag has several), its graph built in memory over the checkpoint. */
  htdemucs(p: CheckpointDemucsPreset, model: number): Promise<LoadedHtdemucs>;
  /** A RoFormer with only the output heads of `stems` (a multi-instrument model), or all of its outputs. */
  roformer(p: RoformerPreset, stems?: readonly string[]): Promise<LoadedRoformer>;
  fft(size: number): RealFft;
  mdx: MdxOptions;
  demucs: DemucsOptions;
}

/**
 * How the engine scales the input before the stage and back after it: demucs' separate.py normalises by the whole
 * input's mean and std; python-audio-separator's MDXC path (RoFormers) brings a peak above 0.9 down to 0.9.
 */
export type InputScaling = 'none' | 'mean-std' | 'peak';

export interface Route {
  /** Engine label recorded in the task result, e.g. `onnx-mdx:Kim_Vocal_2`. */
  label: string;
  presets: NeuralPreset[];
  scaling: InputScaling;
  build(deps: StageDeps): Promise<StereoStage>;
  /** Model stems -> issue stems (all but the residual one), per channel at the input rate. */
  compose(model: Record<string, Float32Array>, mix: Float32Array): Record<string, Float32Array>;
}

const sub = (a: Float32Array, b: Float32Array) => a.map((v, i) => v - b[i]!);

function mdxRoute(p: MdxPreset): Route {
  return {
    label: `onnx-mdx:${p.name}`,
    presets: [p],
    scaling: 'none',
    build: async (d) => new MdxStage(await d.session(p), p, d.fft(p.nFft), d.mdx),
    compose: (m, mix) => ({ vocals: p.primary === 'vocals' ? m.vocals! : sub(mix, m.instrumental!) }),
  };
}

function demucsRoute(p: DemucsPreset, stems: readonly string[]): Route {
  return {
    label: `onnx-htdemucs:${p.name}`,
    presets: [p],
    scaling: 'mean-std',
    build: async (d) => new DemucsStage(await d.session(p), p, d.fft(p.nFft), d.demucs),
    compose: (m) => Object.fromEntries(stems.filter((s) => s !== 'other').map((s) => [s, m[s]!])),
  };
}

/**
 * Lead/backing vocals the way UVR chains them: a vocal model isolates the vocals, then the karaoke model, run on
 * those vocals, keeps the backing voices in its "instrumental" output; the lead is the vocals minus that.
 * The vocal model is any vocal stage (an MDX-Net or a RoFormer); `vocalsOf` reads the vocals from its block.
 */
class KaraokeChain implements StereoStage {
  readonly stems = ['vocals', 'backing'];
  private readonly mixFifo = new PlanarFifo();
  private readonly vocalFifo = new PlanarFifo();

  constructor(private readonly voc: StereoStage, private readonly vocalsOf: (block: Record<string, Stereo>, mix: Stereo) => Stereo, private readonly kara: MdxStage) {}

  async push(x: Stereo) {
    this.mixFifo.push({ x });
    return this.karaoke(await this.voc.push(x), false);
  }

  async end() {
    return this.karaoke(await this.voc.end(), true);
  }

  private async karaoke(blocks: Array<Record<string, Stereo>>, last: boolean) {
    const out: Array<Record<string, Stereo>> = [];
    const run = async (ks: Array<Record<string, Stereo>>) => {
      for (const k of ks) {
        const n = k.instrumental![0].length;
        if (n === 0) continue; // tail-padding chunks emit nothing
        const v = this.vocalFifo.take(n).v as Stereo;
        out.push({ vocals: v, backing: k.instrumental! });
      }
    };
    for (const b of blocks) {
      const n = Object.values(b)[0]?.[0].length ?? 0;
      if (n === 0) continue;
      const mix = this.mixFifo.take(n).x as Stereo;
      const vocals = this.vocalsOf(b, mix);
      this.vocalFifo.push({ v: vocals });
      await run(await this.kara.push(vocals));
    }
    if (last) await run(await this.kara.end());
    return out;
  }
}

/** A vocal model as the first half of the karaoke chain: its stage and how to read vocals from its blocks. */
interface VocalModel {
  preset: MdxPreset | RoformerPreset;
  stage(d: StageDeps): Promise<StereoStage>;
  vocals(block: Record<string, Stereo>, mix: Stereo): Stereo;
}

function mdxVocal(p: MdxPreset): VocalModel {
  return {
    preset: p,
    stage: async (d) => new MdxStage(await d.session(p), p, d.fft(p.nFft), d.mdx),
    vocals: (b, mix) => (p.primary === 'vocals' ? b.vocals! : (mix.map((c, i) => sub(c, b.instrumental![i]!)) as Stereo)),
  };
}

function roformerVocal(p: RoformerPreset): VocalModel {
  return {
    preset: p,
    stage: async (d) => {
      const loaded = await d.roformer(p);
      return loaded.createStage(d.fft(loaded.config.nFft));
    },
    vocals: (b) => b.vocals!,
  };
}

function karaokeRoute(voc: VocalModel, kara: MdxPreset): Route {
  const scaling: InputScaling = voc.preset.family === 'roformer' ? 'peak' : 'none';
  return {
    label: voc.preset.family === 'roformer' ? `onnx-roformer:${voc.preset.name}+onnx-mdx:${kara.name}` : `onnx-mdx:${voc.preset.name}+${kara.name}`,
    presets: [voc.preset, kara],
    scaling,
    build: async (d) => new KaraokeChain(await voc.stage(d), (b, mix) => voc.vocals(b, mix), new MdxStage(await d.session(kara), kara, d.fft(kara.nFft), d.mdx)),
    compose: (m) => ({ lead_vocals: sub(m.vocals!, m.backing!), backing_vocals: m.backing! }),
  };
}

function vocalRoute(voc: VocalModel): Route {
  if (voc.preset.family === 'mdx') return mdxRoute(voc.preset);
  return {
    label: `onnx-roformer:${voc.preset.name}`,
    presets: [voc.preset],
    scaling: 'peak',
    build: (d) => voc.stage(d),
    compose: (m) => ({ vocals: m.vocals! }),
  };
}

/** HTDemucs from the authors' checkpoints: one network, or a bag (htdemucs_ft) whose sources come from several. */
function checkpointDemucsRoute(p: CheckpointDemucsPreset, stems: readonly string[]): Route {
  return {
    label: `onnx-htdemucs:${p.name}`,
    presets: [p],
    scaling: 'mean-std',
    build: async (d) => {
      const stages: StereoStage[] = [];
      for (let m = 0; m < p.models.length; m++) {
        const { session, preset } = await d.htdemucs(p, m);
        stages.push(new DemucsStage(session, preset, d.fft(preset.nFft), d.demucs));
      }
      return stages.length === 1 ? stages[0]! : new BagStage(stages, p.bagWeights, p.sources);
    },
    compose: (m) => Object.fromEntries(stems.filter((s) => s !== 'other').map((s) => [s, m[s]!])),
  };
}

/** A multi-instrument RoFormer (MVSep Mega) running only the heads of the stems asked for. */
function roformerHeadsRoute(p: RoformerPreset, stems: readonly string[]): Route {
  const wanted = stems.filter((s) => s !== 'other');
  return {
    label: `onnx-roformer:${p.name}`,
    presets: [p],
    scaling: 'peak',
    build: async (d) => {
      const loaded = await d.roformer(p, wanted);
      return loaded.createStage(d.fft(loaded.config.nFft));
    },
    compose: (m) => Object.fromEntries(wanted.map((s) => [s, m[s]!])),
  };
}

const DEMUCS_4 = ['drums', 'bass', 'other', 'vocals'];
const DEMUCS_6 = [...DEMUCS_4, 'guitar', 'piano'];

type DemucsLike = DemucsPreset | CheckpointDemucsPreset;

/**
 * The best route for a model type among `available` models, or undefined (then the built-in engine serves it).
 * Preferences, each where installed (or, for the auto-pull's plan, catalogued):
 * - vocals (350, and the vocal half of 490): the RoFormers in catalog order (Mel-Band Kim, then BS-RoFormer viperx:
 *   docs/models.md gives the published SDRs), then MDX-Net vocal models, then MDX-Net instrumental ones, then
 *   HTDemucs' vocals;
 * - 490: that vocal model plus the MDX karaoke model; without one, a multi-instrument RoFormer's lead/backing heads;
 * - drums, bass, the 4- and 6-stem sets: HTDemucs with the fewest sources that cover the stems, the authors'
 *   checkpoints before third-party ONNX exports; piano and guitar (380, 390) from a multi-instrument RoFormer
 *   when a site installed one, else HTDemucs-6s; strings, wind and synthesizer (491-493) only from such a RoFormer.
 */
export function routeFor(modelType: number, available: readonly NeuralPreset[], stemsOf: (t: number) => readonly string[]): Route | undefined {
  const mdxs = available.filter((p): p is MdxPreset => p.family === 'mdx');
  const roformers = available.filter((p): p is RoformerPreset => p.family === 'roformer');
  const vocals: VocalModel[] = [
    ...roformers.filter((p) => !p.heads && p.stems.includes('vocals')).map(roformerVocal),
    ...mdxs.filter((p) => !p.karaoke && p.primary === 'vocals').map(mdxVocal),
    ...mdxs.filter((p) => !p.karaoke && p.primary === 'instrumental').map(mdxVocal),
  ];
  const karaoke = mdxs.find((p) => p.karaoke);
  const stems = stemsOf(modelType);
  const named = stems.filter((s) => s !== 'other');
  const multi = roformers.find((p) => p.heads && named.every((s) => p.stems.includes(s)));
  if (modelType === 490) {
    if (karaoke && vocals[0]) return karaokeRoute(vocals[0], karaoke);
    return multi ? roformerHeadsRoute(multi, stems) : undefined;
  }
  if (modelType === 350 && vocals[0]) return vocalRoute(vocals[0]);
  if (modelType === 380 || modelType === 390 || modelType === 491 || modelType === 492 || modelType === 493) {
    if (multi) return roformerHeadsRoute(multi, stems);
  }
  if (modelType === 491 || modelType === 492 || modelType === 493) return undefined;
  // The authors' checkpoints before exports; within each, a model never pulled on its own (the fine-tuned bag) is
  // there because a site chose it.
  const rank = (p: DemucsLike) => (p.family === 'htdemucs-checkpoint' ? 0 : 2) + (p.autoPull === false ? 0 : 1);
  const demucs = available
    .filter((p): p is DemucsLike => p.family === 'htdemucs' || p.family === 'htdemucs-checkpoint')
    .filter((p) => stems.every((s) => s === 'other' || p.sources.includes(s)))
    .sort((a, b) => a.sources.length - b.sources.length || rank(a) - rank(b));
  const best = demucs[0];
  if (!best) return undefined;
  return best.family === 'htdemucs' ? demucsRoute(best, stems) : checkpointDemucsRoute(best, stems);
}

export const DEMUCS_SOURCES = { four: DEMUCS_4, six: DEMUCS_6 } as const;
