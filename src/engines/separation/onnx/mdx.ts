import type { RealFft } from '../../../media/dsp/fft.js';
import { istft, stft, type Spectrogram } from '../../../media/dsp/stft.js';
import type { MdxPreset } from './presets.js';
import { OverlapAddStream, symmetricHann, type ChunkPlan, type ChunkRequest, type Stereo } from './overlap-add.js';
import { ort } from './session.js';

/**
 * UVR MDX-Net models (vocal, instrumental, karaoke) as python-audio-separator's MDXSeparator runs them:
 * chunks of hop*(dim_t-1) samples (exactly dim_t STFT frames), overlap 0.25 weighted by numpy.hanning, n_fft/2 of
 * zeros in front and zeros behind up to a whole number of "generated" blocks; per chunk a centred periodic-Hann STFT
 * of each channel, bins [0, dim_f) as [1, 4, dim_f, dim_t] (L.re, L.im, R.re, R.im) with the 3 lowest bins zeroed,
 * the network, the cut bins zero-padded back and an iSTFT. The output is multiplied by the model's `compensate`.
 * Not reproduced: audio-separator's peak normalisation of loud inputs (UVR leaves it off by default).
 */
export interface MdxOptions {
  overlap?: number;
  /** UVR "denoise": run on x and -x and average (twice the cost). */
  denoise?: boolean;
}

export function mdxPlan(p: MdxPreset, overlap = 0.25): ChunkPlan {
  const chunk = p.hop * (p.dimT - 1);
  const trim = p.nFft / 2;
  const gen = chunk - 2 * trim;
  if (gen <= 0) throw new Error(`${p.name}: chunk ${chunk} too short for n_fft ${p.nFft}`);
  return {
    chunk,
    step: Math.trunc((1 - overlap) * chunk),
    lead: trim,
    mixtureLength: (n) => trim + n + (gen + trim - (n % gen)),
    window: symmetricHann,
  };
}

/** The complex spectrogram of a stereo chunk as the model's [1, 4, dim_f, dim_t] input. */
export function mdxInput(spec: [Spectrogram, Spectrogram], dimF: number, dimT: number): Float32Array {
  const data = new Float32Array(4 * dimF * dimT);
  spec.forEach((s, c) => {
    if (s.frames !== dimT) throw new Error(`MDX chunk has ${s.frames} frames, model wants ${dimT}`);
    const re = (2 * c) * dimF * dimT;
    const im = (2 * c + 1) * dimF * dimT;
    // UVR zeroes the 3 lowest bins before the network (`spek[:, :, :3, :] *= 0`).
    for (let f = 3; f < dimF; f++) {
      for (let t = 0; t < dimT; t++) {
        data[re + f * dimT + t] = s.re[t * s.bins + f]!;
        data[im + f * dimT + t] = s.im[t * s.bins + f]!;
      }
    }
  });
  return data;
}

/** Channel c of the model output as a full spectrogram (bins >= dim_f are zero, as in UVR's inverse). */
export function mdxOutputChannel(out: Float32Array, c: number, dimF: number, dimT: number, bins: number): Spectrogram {
  const spec: Spectrogram = { frames: dimT, bins, re: new Float32Array(dimT * bins), im: new Float32Array(dimT * bins) };
  const re = (2 * c) * dimF * dimT;
  const im = (2 * c + 1) * dimF * dimT;
  for (let f = 0; f < dimF; f++) {
    for (let t = 0; t < dimT; t++) {
      spec.re[t * bins + f] = out[re + f * dimT + t]!;
      spec.im[t * bins + f] = out[im + f * dimT + t]!;
    }
  }
  return spec;
}

export class MdxStage {
  readonly stems: readonly string[];
  private readonly stream: OverlapAddStream;
  private readonly inputName: string;

  constructor(
    private readonly session: ort.InferenceSession,
    private readonly preset: MdxPreset,
    private readonly fft: RealFft,
    private readonly opts: MdxOptions = {},
  ) {
    if (fft.size !== preset.nFft) throw new Error(`MDX: FFT size ${fft.size} != n_fft ${preset.nFft}`);
    this.inputName = session.inputNames[0]!;
    this.stems = [preset.primary];
    this.stream = new OverlapAddStream(mdxPlan(preset, opts.overlap), this.stems, (req) => this.runChunk(req));
  }

  push(x: Stereo) {
    return this.stream.push(x);
  }

  end() {
    return this.stream.end();
  }

  private async model(input: Float32Array): Promise<Float32Array> {
    const { dimF, dimT } = this.preset;
    const result = await this.session.run({ [this.inputName]: new ort.Tensor('float32', input, [1, 4, dimF, dimT]) });
    const out = Object.values(result)[0] as ort.Tensor;
    return out.data as Float32Array;
  }

  private async runChunk(req: ChunkRequest): Promise<Record<string, Stereo>> {
    const { nFft, hop, dimF, dimT, compensate } = this.preset;
    const chunk = hop * (dimT - 1);
    // Short last chunks are zero-padded to the full chunk, as in `demix`.
    const x = req.read(req.start, req.start + chunk);
    const spec = x.map((ch) => stft(ch, this.fft, { nFft, hop })) as [Spectrogram, Spectrogram];
    const input = mdxInput(spec, dimF, dimT);
    let out = await this.model(input);
    if (this.opts.denoise) {
      const neg = await this.model(input.map((v) => -v));
      out = out.map((v, i) => 0.5 * v - 0.5 * neg[i]!);
    }
    const bins = nFft / 2 + 1;
    const y = [0, 1].map((c) => {
      const wave = istft(mdxOutputChannel(out, c, dimF, dimT, bins), this.fft, { nFft, hop, length: chunk });
      for (let i = 0; i < wave.length; i++) wave[i]! *= compensate;
      return wave;
    }) as Stereo;
    return { [this.preset.primary]: y };
  }
}
