import type { EngineContext } from '../../ports/engines.js';
import { loadFftProvider, type FftProvider, type RealFft } from '../../media/dsp/fft.js';
import { istft, stft, type Spectrogram } from '../../media/dsp/stft.js';
import { stftSizeFor } from '../separation/builtin.js';
import { centerMask } from '../separation/dsp/center.js';
import { repeatingMask } from '../separation/dsp/repet.js';
import { runSegmented } from '../separation/dsp/segments.js';
import type { AudioSource, SeparationEngine, StemSink } from '../separation/engine.js';

/**
 * Built-in voice/background split for spoken audio, as a SeparationEngine (model_type 350: vocals +
 * remainder) so it is interchangeable with the separation engines. It reuses the song engine's
 * segmenting and its centre (stereo) and REPET-SIM (repeating accompaniment) cues but drops what hurts
 * speech: the song engine's harmonic/percussive split files consonants and pitch glides under drums,
 * and its 220 Hz low cut removes a male voice's fundamental (bench/results/enhance.md: the song
 * engine's vocals lose 8 dB SI-SDR on speech over music, this one does not).
 */
export interface SpeechSeparatorOptions {
  fft?: FftProvider;
  /** Exponent on the centre cue (0 ignores stereo placement); 2 and 0.5 scored best on speech over music (bench). */
  centerPower?: number;
  /** Exponent on the non-repeating cue. */
  repetPower?: number;
}

class SpeechMasker {
  private readonly fft: RealFft;

  constructor(provider: FftProvider, private readonly rate: number, private readonly nFft: number, private readonly hop: number, private readonly opts: SpeechSeparatorOptions) {
    this.fft = provider.create(nFft);
  }

  dispose(): void {
    this.fft.dispose();
  }

  separate(channels: Float32Array[]): Record<string, Float32Array[]> {
    const len = channels[0]?.length ?? 0;
    if (len === 0) return { vocals: channels.map(() => new Float32Array(0)), remainder: channels.map(() => new Float32Array(0)) };
    const so = { nFft: this.nFft, hop: this.hop };
    const spec = channels.map((x) => stft(x, this.fft, so));
    const { frames, bins } = spec[0]!;
    const mag = new Float32Array(frames * bins);
    for (const s of spec) for (let i = 0; i < mag.length; i++) mag[i]! += Math.hypot(s.re[i]!, s.im[i]!) / spec.length;
    const center = centerMask(spec[0]!, spec[1], 2);
    const rep = repeatingMask(mag, frames, bins, { maxRepeats: 12, minDistance: Math.max(1, Math.round((0.25 * this.rate) / this.hop)), bands: 64 });
    const binHz = this.rate / this.nFft;
    const cp = this.opts.centerPower ?? 2;
    const rp = this.opts.repetPower ?? 0.5;
    const mask = new Float32Array(frames * bins);
    const band = new Float64Array(bins);
    for (let k = 0; k < bins; k++) {
      const f = k * binHz;
      // Speech lives in ~70 Hz .. 10 kHz; below, hum and kick drums; above, cymbals and air.
      band[k] = f < 50 ? 0 : f < 80 ? (f - 50) / 30 : f > 10000 ? 0.5 : 1;
    }
    // Frame by frame, so the frame-major arrays are read in order (bin by bin strode a whole frame).
    for (let t = 0; t < frames; t++) {
      for (let k = 0, i = t * bins; k < bins; k++, i++) mask[i] = band[k]! * center[i]! ** cp * (1 - rep[i]!) ** rp;
    }
    const vocals = spec.map((s) => {
      const m: Spectrogram = { frames, bins, re: new Float32Array(s.re.length), im: new Float32Array(s.im.length) };
      for (let i = 0; i < mask.length; i++) {
        m.re[i] = s.re[i]! * mask[i]!;
        m.im[i] = s.im[i]! * mask[i]!;
      }
      return istft(m, this.fft, { ...so, length: len });
    });
    // The remainder is the mixture minus the voice, so the two stems sum back to the input.
    const remainder = channels.map((x, c) => {
      const v = vocals[c]!;
      const r = new Float32Array(x.length);
      for (let i = 0; i < x.length; i++) r[i] = x[i]! - v[i]!;
      return r;
    });
    return { vocals, remainder };
  }
}

export class SpeechSeparationEngine implements SeparationEngine {
  readonly id = 'builtin-speech';

  constructor(private readonly opts: SpeechSeparatorOptions = {}) {}

  supports(modelType: number): boolean {
    return modelType === 350;
  }

  async separate(input: AudioSource, modelType: number, ctx: EngineContext, sink: StemSink): Promise<void> {
    if (!this.supports(modelType)) throw new Error(`speech separation supports model_type 350 only, not ${modelType}`);
    const { nFft, hop } = stftSizeFor(input.sampleRate);
    const masker = new SpeechMasker(this.opts.fft ?? (await loadFftProvider()), input.sampleRate, nFft, hop, this.opts);
    // Same segmenting as the song engine: 20 s hops, 4 s overlaps, 1 s margins on the STFT hop grid.
    const snap = (s: number) => Math.max(hop, Math.round((s * input.sampleRate) / hop) * hop);
    const margin = snap(1);
    const overlap = Math.max(snap(4), 2 * margin + 2 * hop);
    try {
      await runSegmented(input, { hop: Math.max(snap(20), overlap), overlap, margin }, (seg) => masker.separate(seg), sink, { signal: ctx.signal, onProgress: (f) => ctx.onProgress(f) });
    } finally {
      masker.dispose();
    }
  }
}
