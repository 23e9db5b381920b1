import type { RealFft } from '../../../media/dsp/fft.js';
import { DemucsStage, type DemucsOptions } from './htdemucs.js';
import { MdxStage, type MdxOptions } from './mdx.js';
import type { Stereo } from './overlap-add.js';
import type { DemucsPreset, MdxPreset, NeuralPreset } from './presets.js';
import type { ort } from './session.js';
import { PlanarFifo } from './stream.js';

/**
 * Which installed models serve which model_type, and how their stems become the stems. A route's stage runs
 * at the model rate in stereo; `compose` then works at the input rate on the model's stems and the mixture, and the
 * engine puts whatever the composed stems miss into the last stem (`other` / `remainder`).
 */
export interface StereoStage {
  readonly stems: readonly string[];
  push(x: Stereo): Promise<Array<Record<string, Stereo>>>;
  end(): Promise<Array<Record<string, Stereo>>>;
}

export interface StageDeps {
  session(p: NeuralPreset): Promise<ort.InferenceSession>;
  fft(size: number): RealFft;
  mdx: MdxOptions;
  demucs: DemucsOptions;
}

export interface Route {
  /** Engine label recorded in the task result, e.g. `onnx-mdx:Kim_Vocal_2`. */
  label: string;
  presets: NeuralPreset[];
  /** Demucs normalises the whole input by its mean and std first (demucs/separate.py). */
  needsStats: boolean;
  build(deps: StageDeps): Promise<StereoStage>;
  /** Model stems -> issue stems (all but the residual one), per channel at the input rate. */
  compose(model: Record<string, Float32Array>, mix: Float32Array): Record<string, Float32Array>;
}

const sub = (a: Float32Array, b: Float32Array) => a.map((v, i) => v - b[i]!);

function mdxRoute(p: MdxPreset): Route {
  return {
    label: `onnx-mdx:${p.name}`,
    presets: [p],
    needsStats: false,
    build: async (d) => new MdxStage(await d.session(p), p, d.fft(p.nFft), d.mdx),
    compose: (m, mix) => ({ vocals: p.primary === 'vocals' ? m.vocals! : sub(mix, m.instrumental!) }),
  };
}

function demucsRoute(p: DemucsPreset, stems: readonly string[]): Route {
  return {
    label: `onnx-htdemucs:${p.name}`,
    presets: [p],
    needsStats: true,
    build: async (d) => new DemucsStage(await d.session(p), p, d.fft(p.nFft), d.demucs),
    compose: (m) => Object.fromEntries(stems.filter((s) => s !== 'other').map((s) => [s, m[s]!])),
  };
}

/**
 * Lead/backing vocals the way UVR chains them: a vocal model isolates the vocals, then the karaoke model, run on
 * those vocals, keeps the backing voices in its "instrumental" output; the lead is the vocals minus that.
 */
class KaraokeChain implements StereoStage {
  readonly stems = ['vocals', 'backing'];
  private readonly mixFifo = new PlanarFifo();
  private readonly vocalFifo = new PlanarFifo();

  constructor(private readonly voc: MdxStage, private readonly vocPreset: MdxPreset, private readonly kara: MdxStage) {}

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
      const n = b[this.vocPreset.primary]![0].length;
      if (n === 0) continue;
      const mix = this.mixFifo.take(n).x as Stereo;
      const vocals = (this.vocPreset.primary === 'vocals' ? b.vocals! : mix.map((c, i) => sub(c, b.instrumental![i]!))) as Stereo;
      this.vocalFifo.push({ v: vocals });
      await run(await this.kara.push(vocals));
    }
    if (last) await run(await this.kara.end());
    return out;
  }
}

function karaokeRoute(voc: MdxPreset, kara: MdxPreset): Route {
  return {
    label: `onnx-mdx:${voc.name}+${kara.name}`,
    presets: [voc, kara],
    needsStats: false,
    build: async (d) =>
      new KaraokeChain(new MdxStage(await d.session(voc), voc, d.fft(voc.nFft), d.mdx), voc, new MdxStage(await d.session(kara), kara, d.fft(kara.nFft), d.mdx)),
    compose: (m) => ({ lead_vocals: sub(m.vocals!, m.backing!), backing_vocals: m.backing! }),
  };
}

const DEMUCS_4 = ['drums', 'bass', 'other', 'vocals'];
const DEMUCS_6 = [...DEMUCS_4, 'guitar', 'piano'];

/** The best route for a model type among `available` models, or undefined (then the built-in engine serves it). */
export function routeFor(modelType: number, available: readonly NeuralPreset[], stemsOf: (t: number) => readonly string[]): Route | undefined {
  const mdxs = available.filter((p): p is MdxPreset => p.family === 'mdx');
  const vocalMdx = [...mdxs.filter((p) => !p.karaoke && p.primary === 'vocals'), ...mdxs.filter((p) => !p.karaoke && p.primary === 'instrumental')];
  const karaoke = mdxs.find((p) => p.karaoke);
  const demucs = available.filter((p): p is DemucsPreset => p.family === 'htdemucs');
  const stems = stemsOf(modelType);
  // A 4-stem model is preferred where it suffices (better on the shared stems); 6-stem where piano/guitar are asked.
  const byCoverage = demucs
    .filter((p) => stems.every((s) => s === 'other' || p.sources.includes(s)))
    .sort((a, b) => a.sources.length - b.sources.length);
  if (modelType === 490) return karaoke && vocalMdx[0] ? karaokeRoute(vocalMdx[0], karaoke) : undefined;
  if (modelType === 350 && vocalMdx[0]) return mdxRoute(vocalMdx[0]);
  if (modelType === 491 || modelType === 492 || modelType === 493) return undefined;
  return byCoverage[0] ? demucsRoute(byCoverage[0], stems) : undefined;
}

export const DEMUCS_SOURCES = { four: DEMUCS_4, six: DEMUCS_6 } as const;
