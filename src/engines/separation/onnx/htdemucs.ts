import type { RealFft } from '../../../media/dsp/fft.js';
import { istft, stft, type Spectrogram } from '../../../media/dsp/stft.js';
import type { DemucsLayout, DemucsPreset } from './presets.js';
import { demucsTriangle, OverlapAddStream, type ChunkPlan, type ChunkRequest, type Stereo } from './overlap-add.js';
import { inputByRank, ort, outputByRank } from './session.js';

/**
 * HTDemucs / HTDemucs-6s exported with the STFT outside the graph: inputs the segment's waveform [1, 2, 343980] and
 * its spectrogram as complex-as-channels ([1, 4, 2048, 336] sevagh/demucs.onnx, [1, 2, 2, 2048, 336] openkara
 * spectral-core: same memory order); outputs a frequency branch ([1, S, 4, 2048, 336] / [1, S, 2, 2, 2048, 336],
 * iSTFT'd here) and a time branch [1, S, 2, 343980], summed per source. An export with the STFT inside the graph
 * (waveform in, stems [1, S, 2, 343980] out) gets the same segmenting with no transform here.
 * The segment loop is demucs `apply_model(split=True, overlap=0.25, transition_power=1)`: segments every
 * 0.75 * segment, each short one padded symmetrically with its real neighbours, weighted by a triangle and divided
 * by the summed weights. `shifts`: demucs draws one random offset in [0, 0.5 s); here it is fixed (`shiftSamples`)
 * so that results are reproducible; 0 disables it (demucs shifts=0).
 */
export interface DemucsOptions {
  overlap?: number;
  shiftSamples?: number;
}

export function demucsPlan(p: DemucsPreset, opts: DemucsOptions = {}): ChunkPlan {
  const chunk = p.segment;
  const weight = demucsTriangle(chunk);
  const lead = opts.shiftSamples ?? 0;
  return {
    chunk,
    step: Math.trunc((1 - (opts.overlap ?? 0.25)) * chunk),
    lead,
    mixtureLength: (n) => lead + n,
    window: () => weight,
  };
}

function reflect(j: number, len: number): number {
  const period = 2 * (len - 1);
  let m = j % period;
  if (m < 0) m += period;
  return m < len ? m : period - m;
}

/** HTDemucs `_spec`: reflect-pad 3*hop/2 (+ to a hop multiple), normalised STFT, drop Nyquist and 2 frames per side. */
export function demucsSpec(x: Float32Array, fft: RealFft, nFft: number): Spectrogram {
  const hop = nFft / 4;
  const le = Math.ceil(x.length / hop);
  const pad = (hop / 2) * 3;
  const padded = new Float32Array(x.length + 2 * pad + le * hop - x.length);
  for (let i = 0; i < padded.length; i++) padded[i] = x[reflect(i - pad, x.length)]!;
  const full = stft(padded, fft, { nFft, hop });
  const bins = nFft / 2;
  const scale = 1 / Math.sqrt(nFft);
  const out: Spectrogram = { frames: le, bins, re: new Float32Array(le * bins), im: new Float32Array(le * bins) };
  for (let t = 0; t < le; t++) {
    for (let f = 0; f < bins; f++) {
      out.re[t * bins + f] = full.re[(t + 2) * full.bins + f]! * scale;
      out.im[t * bins + f] = full.im[(t + 2) * full.bins + f]! * scale;
    }
  }
  return out;
}

/** HTDemucs `_ispec`: zero Nyquist bin and 2 zero frames per side back, normalised iSTFT, cut to `length`. */
export function demucsIspec(z: Spectrogram, fft: RealFft, nFft: number, length: number): Float32Array {
  const hop = nFft / 4;
  const pad = (hop / 2) * 3;
  const bins = nFft / 2 + 1;
  const frames = z.frames + 4;
  const full: Spectrogram = { frames, bins, re: new Float32Array(frames * bins), im: new Float32Array(frames * bins) };
  const scale = Math.sqrt(nFft);
  for (let t = 0; t < z.frames; t++) {
    for (let f = 0; f < z.bins; f++) {
      full.re[(t + 2) * bins + f] = z.re[t * z.bins + f]! * scale;
      full.im[(t + 2) * bins + f] = z.im[t * z.bins + f]! * scale;
    }
  }
  const le = hop * Math.ceil(length / hop) + 2 * pad;
  return istft(full, fft, { nFft, hop, length: le }).subarray(pad, pad + length);
}

/** The layout a graph declares: the rank of its spectrogram input, or waveform inputs only (STFT in the graph). */
export function demucsLayout(session: ort.InferenceSession, declared: DemucsLayout = 'sevagh'): DemucsLayout {
  const ranks = (session.inputMetadata ?? []).flatMap((m) => (m.isTensor && Array.isArray(m.shape) ? [m.shape.length] : []));
  if (ranks.includes(5)) return 'spectral-core';
  if (ranks.includes(4)) return 'sevagh';
  if (ranks.length > 0 && ranks.every((r) => r === 3)) return 'waveform';
  return declared;
}

export class DemucsStage {
  readonly stems: readonly string[];
  private readonly stream: OverlapAddStream;
  private readonly waveName: string;
  private readonly specName: string;
  private readonly layout: DemucsLayout;
  private readonly specDims: (bins: number, frames: number) => number[];
  private readonly freqRank: number;

  constructor(
    private readonly session: ort.InferenceSession,
    private readonly preset: DemucsPreset,
    private readonly fft: RealFft,
    opts: DemucsOptions = {},
  ) {
    if (fft.size !== preset.nFft) throw new Error(`HTDemucs: FFT size ${fft.size} != n_fft ${preset.nFft}`);
    this.layout = demucsLayout(session, preset.layout);
    const core = this.layout === 'spectral-core';
    this.waveName = inputByRank(session, 3, core ? 1 : 0);
    this.specName = this.layout === 'waveform' ? '' : inputByRank(session, core ? 5 : 4, core ? 0 : 1);
    this.specDims = (bins, frames) => (core ? [1, 2, 2, bins, frames] : [1, 4, bins, frames]);
    this.freqRank = core ? 6 : 5;
    this.stems = preset.sources;
    this.stream = new OverlapAddStream(demucsPlan(preset, opts), this.stems, (req) => this.runChunk(req));
  }

  push(x: Stereo) {
    return this.stream.push(x);
  }

  end() {
    return this.stream.end();
  }

  private async runChunk(req: ChunkRequest): Promise<Record<string, Stereo>> {
    const { segment: L, nFft, sources } = this.preset;
    // TensorChunk.padded: a short chunk takes delta/2 real samples before it (zeros past the input's ends).
    const delta = L - req.length;
    const from = req.start - Math.floor(delta / 2);
    const x = req.read(from, from + L);
    const off = Math.floor(delta / 2); // center_trim
    const wave = new Float32Array(2 * L);
    wave.set(x[0], 0);
    wave.set(x[1], L);
    const out: Record<string, Stereo> = {};
    if (this.layout === 'waveform') {
      const stems = outputByRank(await this.session.run({ [this.waveName]: new ort.Tensor('float32', wave, [1, 2, L]) }), 4).data as Float32Array;
      sources.forEach((name, s) => {
        out[name] = [0, 1].map((c) => stems.slice((s * 2 + c) * L + off, (s * 2 + c) * L + off + req.length)) as Stereo;
      });
      return out;
    }
    const spec = x.map((ch) => demucsSpec(ch, this.fft, nFft));
    const { frames: T, bins: F } = spec[0]!;
    const specData = new Float32Array(4 * F * T);
    spec.forEach((s, c) => {
      for (let f = 0; f < F; f++) {
        for (let t = 0; t < T; t++) {
          specData[((2 * c) * F + f) * T + t] = s.re[t * F + f]!;
          specData[((2 * c + 1) * F + f) * T + t] = s.im[t * F + f]!;
        }
      }
    });
    const result = await this.session.run({
      [this.waveName]: new ort.Tensor('float32', wave, [1, 2, L]),
      [this.specName]: new ort.Tensor('float32', specData, this.specDims(F, T)),
    });
    const freq = outputByRank(result, this.freqRank).data as Float32Array;
    const time = outputByRank(result, 4).data as Float32Array;
    sources.forEach((name, s) => {
      out[name] = [0, 1].map((c) => {
        const z: Spectrogram = { frames: T, bins: F, re: new Float32Array(T * F), im: new Float32Array(T * F) };
        const re = (s * 4 + 2 * c) * F * T;
        const im = (s * 4 + 2 * c + 1) * F * T;
        for (let f = 0; f < F; f++) {
          for (let t = 0; t < T; t++) {
            z.re[t * F + f] = freq[re + f * T + t]!;
            z.im[t * F + f] = freq[im + f * T + t]!;
          }
        }
        const y = demucsIspec(z, this.fft, nFft, L);
        const tb = (s * 2 + c) * L;
        const o = new Float32Array(req.length);
        for (let k = 0; k < req.length; k++) o[k] = y[off + k]! + time[tb + off + k]!;
        return o;
      }) as Stereo;
    });
    return out;
  }
}
