import type { InferenceSession } from 'onnxruntime-node';
import { concatSamples } from '../../media/audio.js';
import { Tensor } from 'onnxruntime-node';
import { loadFftProvider, type RealFft } from '../../media/dsp/fft.js';
import {
  DfAnalysis, DfSynthesis, ErbFeature, UnitNormFeature, attenuationLimit, enhanceFrame, erbWidths, normAlpha,
  postFilter, vorbisWindow, type SpecFrame,
} from './deepfilter-features.js';

/**
 * DeepFilterNet3 from its authors' ONNX export (enc.onnx, erb_dec.onnx, df_dec.onnx + config.ini, as
 * df/scripts/export.py writes them): Soundry does what df.enhance.enhance does around the networks (libDF's analysis,
 * features, the look-ahead shifts, mask, deep filter, post-filter, attenuation limit, synthesis, delay compensation).
 * Proved against DeepFilterNet's own Python pipeline by test/engines/reference/dfn3.test.ts.
 */

export interface DfConfig {
  sampleRate: number;
  fftSize: number;
  hopSize: number;
  nbErb: number;
  nbDf: number;
  dfOrder: number;
  dfLookahead: number;
  convLookahead: number;
  normTau: number;
  minNbErbFreqs: number;
  /** The encoder's local-SNR output range (lsnr_min/lsnr_max); enhance() does not use the estimate. */
  lsnrMin: number;
  lsnrMax: number;
  /** mask_pf: DfNet's post-filter on (the CLI's --pf sets it); off in the published DeepFilterNet3 config. */
  postFilter: boolean;
  /** pf_beta */
  postFilterBeta: number;
}

/** onnxruntime-node sessions of the three published graphs. */
export interface DfSessions {
  enc: InferenceSession;
  erbDec: InferenceSession;
  dfDec: InferenceSession;
}

export interface DfOptions {
  /** enhance()'s atten_lim_db: mix the noisy spectrum back so at most this many dB are removed (0/absent: off). */
  attenLimDb?: number;
  /** Overrides the config's mask_pf. */
  postFilter?: boolean;
  signal?: AbortSignal;
}

// config.ini is read by deepfilter-config.ts (parseDfConfig), the one reader; the stream re-checks what it relies on.
function checkConfig(cfg: DfConfig): void {
  if (cfg.fftSize % cfg.hopSize !== 0 || cfg.hopSize * 2 > cfg.fftSize) throw new Error(`DeepFilterNet: hop ${cfg.hopSize} must divide fft ${cfg.fftSize} at least twice`);
  if (cfg.nbDf > cfg.fftSize / 2 + 1) throw new Error(`DeepFilterNet: nb_df ${cfg.nbDf} exceeds the ${cfg.fftSize / 2 + 1} bins`);
  if (cfg.dfLookahead >= cfg.dfOrder) throw new Error(`DeepFilterNet: df_lookahead ${cfg.dfLookahead} must be under df_order ${cfg.dfOrder}`);
}

export interface DfStreamOptions extends DfOptions {
  /**
   * Frames the networks run on per call (default Infinity: the whole signal in one pass, exactly as enhance()).
   * Finite windows bound memory; the networks' GRUs then restart each window, warmed up on `contextFrames`.
   */
  windowFrames?: number;
  /** Frames before each window that are run again to warm the networks' recurrent state (default 200 = 2 s). */
  contextFrames?: number;
}

/**
 * DeepFilterNet3 over a stream of samples at cfg.sampleRate: push any number of samples, get back the enhanced
 * samples that are ready; flush() ends the stream. The delay compensation of enhance(pad=True) is applied, so the
 * concatenated output has the input's length and alignment. Analysis, features and synthesis carry their state
 * exactly; with finite windows only the networks' internal state restarts at window borders.
 */
export class DfStream {
  private readonly window: Float32Array;
  private readonly widths: number[];
  private readonly analysis: DfAnalysis;
  private readonly synthesis: DfSynthesis;
  private readonly erbFeat: ErbFeature;
  private readonly cplxFeat: UnitNormFeature;
  private readonly lookahead: number;
  private readonly windowFrames: number;
  private readonly contextFrames: number;
  private readonly postFilterOn: boolean;
  // Frames kept from index `base` on: spectra, ERB features, complex features (re, im).
  private base = 0;
  private spec: SpecFrame[] = [];
  private erb: Float32Array[] = [];
  private cplx: SpecFrame[] = [];
  private done = 0;
  private pending = new Float32Array(0);
  private inputSamples = 0;
  private outputSamples = 0;
  private toDrop: number;
  private finished = false;

  constructor(private readonly cfg: DfConfig, private readonly sessions: DfSessions, private readonly fft: RealFft, private readonly opts: DfStreamOptions = {}) {
    checkConfig(cfg);
    if (fft.size !== cfg.fftSize) throw new Error(`DeepFilterNet: FFT of size ${fft.size} for fft_size ${cfg.fftSize}`);
    this.window = vorbisWindow(cfg.fftSize);
    this.widths = erbWidths(cfg.sampleRate, cfg.fftSize, cfg.nbErb, cfg.minNbErbFreqs);
    const alpha = normAlpha(cfg.sampleRate, cfg.hopSize, cfg.normTau);
    this.analysis = new DfAnalysis(fft, this.window, cfg.hopSize);
    this.synthesis = new DfSynthesis(fft, this.window, cfg.hopSize);
    this.erbFeat = new ErbFeature(this.widths, alpha);
    this.cplxFeat = new UnitNormFeature(cfg.nbDf, alpha);
    this.lookahead = Math.max(cfg.convLookahead, cfg.dfLookahead);
    this.windowFrames = opts.windowFrames ?? Number.POSITIVE_INFINITY;
    this.contextFrames = opts.contextFrames ?? 200;
    if (!(this.windowFrames >= 1) || !(this.contextFrames >= 0)) throw new Error('DeepFilterNet: windowFrames must be >= 1 and contextFrames >= 0');
    this.postFilterOn = opts.postFilter ?? cfg.postFilter;
    // enhance() pads fft_size zeros and drops the first fft_size - hop output samples (the STFT loop's delay).
    this.toDrop = cfg.fftSize - cfg.hopSize;
  }

  /** Samples the stream holds back before they come out (the look-ahead plus the STFT delay), at most. */
  get latencySamples(): number {
    return (this.lookahead + 1) * this.cfg.hopSize + this.toDrop;
  }

  async push(samples: Float32Array): Promise<Float32Array> {
    if (this.finished) throw new Error('DeepFilterNet stream already flushed');
    this.inputSamples += samples.length;
    this.analyse(samples);
    const out: Float32Array[] = [];
    const frames = this.base + this.spec.length;
    while (Number.isFinite(this.windowFrames) && frames - this.lookahead - this.done >= this.windowFrames) {
      out.push(await this.run(this.done + this.windowFrames, false));
    }
    return concatSamples(out);
  }

  async flush(): Promise<Float32Array> {
    if (this.finished) throw new Error('DeepFilterNet stream already flushed');
    this.finished = true;
    this.analyse(new Float32Array(this.cfg.fftSize));
    const out: Float32Array[] = [];
    const frames = this.base + this.spec.length;
    while (this.done < frames) out.push(await this.run(Math.min(frames, this.done + this.windowFrames), true));
    const all = concatSamples(out);
    // Whatever the last hops produced past the input's length is padding.
    const keep = Math.max(0, this.inputSamples - this.outputSamples);
    this.outputSamples += Math.min(keep, all.length);
    return all.subarray(0, keep);
  }

  private analyse(samples: Float32Array): void {
    const hop = this.cfg.hopSize;
    let buf = samples;
    if (this.pending.length > 0) {
      buf = new Float32Array(this.pending.length + samples.length);
      buf.set(this.pending);
      buf.set(samples, this.pending.length);
    }
    let at = 0;
    for (; at + hop <= buf.length; at += hop) {
      const s = this.analysis.frame(buf.subarray(at, at + hop));
      const e = new Float32Array(this.cfg.nbErb);
      this.erbFeat.frame(s, e);
      const c = { re: new Float32Array(this.cfg.nbDf), im: new Float32Array(this.cfg.nbDf) };
      this.cplxFeat.frame(s, c.re, c.im);
      this.spec.push(s);
      this.erb.push(e);
      this.cplx.push(c);
    }
    this.pending = buf.slice(at);
  }

  /** Runs the networks on frames [done - context, end) and emits frames [done, end). */
  private async run(end: number, final: boolean): Promise<Float32Array> {
    const { signal } = this.opts;
    if (signal?.aborted) throw signal.reason instanceof Error ? signal.reason : Object.assign(new Error('aborted'), { name: 'AbortError' });
    const { nbErb, nbDf, dfOrder, dfLookahead, convLookahead, hopSize } = this.cfg;
    const frames = this.base + this.spec.length;
    const start = Math.max(0, this.done - this.contextFrames, this.base);
    const S = end - start;
    // DfNet.forward's pad_feat: the encoder's frame t sees the features of frame t + conv_lookahead, zeros past the end.
    const featErb = new Float32Array(S * nbErb);
    const featSpec = new Float32Array(2 * S * nbDf);
    for (let j = 0; j < S; j++) {
      const src = start + j + convLookahead;
      if (src >= frames) {
        if (!final) throw new Error('DeepFilterNet: window past the analysed frames');
        continue;
      }
      featErb.set(this.erb[src - this.base]!, j * nbErb);
      const c = this.cplx[src - this.base]!;
      featSpec.set(c.re, j * nbDf);
      featSpec.set(c.im, (S + j) * nbDf);
    }
    const { enc, erbDec, dfDec } = this.sessions;
    const e = await enc.run({ feat_erb: new Tensor('float32', featErb, [1, 1, S, nbErb]), feat_spec: new Tensor('float32', featSpec, [1, 2, S, nbDf]) });
    const emb = output(e, 'emb');
    // One after the other, not concurrently: a stream uses one core, and parallelism comes from running streams
    // (chunks, channels) side by side.
    const mOut = await erbDec.run({ emb, e3: output(e, 'e3'), e2: output(e, 'e2'), e1: output(e, 'e1'), e0: output(e, 'e0') });
    const cOut = await dfDec.run({ emb, c0: output(e, 'c0') });
    const m = floats(output(mOut, 'm'), S * nbErb, 'm');
    const coefs = floats(output(cOut, 'coefs'), S * nbDf * dfOrder * 2, 'coefs');
    for (const t of Object.values(e)) t.dispose();

    const bins = this.cfg.fftSize / 2 + 1;
    const out = new Float32Array((end - this.done) * hopSize);
    const enhanced: SpecFrame = { re: new Float32Array(bins), im: new Float32Array(bins) };
    const taps: (SpecFrame | null)[] = new Array<SpecFrame | null>(dfOrder);
    const atten = this.opts.attenLimDb;
    for (let t = this.done; t < end; t++) {
      const j = t - start;
      for (let n = 0; n < dfOrder; n++) {
        const idx = t - (dfOrder - 1 - dfLookahead) + n;
        taps[n] = idx >= 0 && idx < frames ? this.spec[idx - this.base]! : null;
      }
      const noisy = this.spec[t - this.base]!;
      enhanceFrame(taps, noisy, m.subarray(j * nbErb, (j + 1) * nbErb), this.widths, coefs.subarray(j * nbDf * dfOrder * 2, (j + 1) * nbDf * dfOrder * 2), nbDf, enhanced);
      if (this.postFilterOn) postFilter(noisy, enhanced, this.cfg.postFilterBeta);
      if (atten !== undefined && Math.abs(atten) > 0) attenuationLimit(noisy, enhanced, atten);
      this.synthesis.frame(enhanced, out.subarray((t - this.done) * hopSize, (t - this.done + 1) * hopSize));
    }
    this.done = end;
    this.forget();
    const drop = Math.min(this.toDrop, out.length);
    this.toDrop -= drop;
    const ready = out.subarray(drop);
    if (!final) this.outputSamples += ready.length;
    return ready;
  }

  /** Drops frames no later window needs (its context and the deep filter's past taps). */
  private forget(): void {
    const keepFrom = Math.max(this.base, this.done - Math.max(this.contextFrames, this.cfg.dfOrder));
    const n = keepFrom - this.base;
    if (n <= 0) return;
    this.spec.splice(0, n);
    this.erb.splice(0, n);
    this.cplx.splice(0, n);
    this.base = keepFrom;
  }
}

function output(outs: InferenceSession.OnnxValueMapType, name: string): Tensor {
  const t = outs[name];
  if (!(t instanceof Tensor)) throw new Error(`DeepFilterNet graph gave no tensor '${name}'`);
  return t;
}

function floats(t: Tensor, size: number, name: string): Float32Array {
  if (!(t.data instanceof Float32Array) || t.data.length !== size) throw new Error(`DeepFilterNet '${name}': expected ${size} float32 values, got [${t.dims.join(', ')}] ${t.type}`);
  return t.data;
}

/** Whole-signal enhancement at cfg.sampleRate, the way df.enhance.enhance does it (pad=True). */
export async function enhanceDf(audio: Float32Array, cfg: DfConfig, sessions: DfSessions, opts: DfOptions & { fft?: RealFft } = {}): Promise<Float32Array> {
  const fft = opts.fft ?? (await loadFftProvider()).create(cfg.fftSize);
  try {
    const stream = new DfStream(cfg, sessions, fft, opts);
    const head = await stream.push(audio);
    const tail = await stream.flush();
    return concatSamples([head, tail]);
  } finally {
    if (!opts.fft) fft.dispose();
  }
}
