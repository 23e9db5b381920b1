import type { AudioData } from '../../media/audio.js';
import type { AudioStage, AnalysisPass } from './stage.js';
import { RnnoiseStage } from './denoise.js';
import { OnnxDenoiseStage, onnxDenoiserAvailable } from './onnx-denoise.js';
import { DereverbStage } from './dereverb.js';
import { DeclickStage } from './declick.js';
import { LongSilenceStage } from './silences.js';
import { DisfluencyStage } from './fillers.js';
import { VadTracker, WebRtcVad } from './vad.js';
import { BiquadStage, CompressorStage, DeEsserStage, designAutoEq } from './eq.js';
import type { LoudnessResult } from './loudness.js';

/** The fourteen flags of the spec. */
export type EnhanceFlag =
  | 'remove_background_audio' | 'remove_echo' | 'autoid' | 'remove_noise' | 'long_silences' | 'mouth_sounds' | 'stutters'
  | 'fillers' | 'hesitations' | 'keep_music' | 'autoeq' | 'normalize' | 'studio_sound' | 'remove_reverb';

/** Flags this server can render today; the others are refused at create (docs/api.md), never faked. */
export const SUPPORTED_FLAGS: readonly EnhanceFlag[] = [
  'autoid', 'remove_noise', 'remove_echo', 'remove_reverb', 'long_silences', 'mouth_sounds', 'autoeq', 'normalize', 'studio_sound',
  'fillers', 'hesitations', 'stutters',
];

/**
 * The one chain order, and why: clicks are repaired on the raw signal (denoisers smear them);
 * noise goes before dereverberation (WPE's prediction is biased by noise); fillers, hesitations and
 * stutters ('disfluency') are found on the cleaned voice (noise and reverberation smear the pitch and
 * cepstral stability they are detected by) and cut before long_silences (removing a filler leaves
 * two pauses side by side, which long_silences then shortens as one); silences are cut on the
 * cleaned signal (VAD is more reliable); EQ, de-essing and compression shape the voice; loudness
 * is last so nothing after it moves the level.
 */
export const STAGE_ORDER = ['declick', 'denoise', 'dereverb', 'disfluency', 'long_silences', 'autoeq', 'deesser', 'compressor', 'normalize'] as const;
export type StageName = (typeof STAGE_ORDER)[number];

export interface InputStats {
  loudness: LoudnessResult;
  /** 90th minus 10th percentile of 50 ms frame energies, dB: a blind SNR estimate. */
  snrDb: number;
  /** Share of 50 ms frames more than 35 dB under the loudest decile. */
  silenceRatio: number;
  spectrum: Float64Array;
}

export interface EnhancePlan {
  stages: StageName[];
  /** Which disfluencies `disfluency` removes (fillers, hesitations, stutters). */
  disfluencies?: Array<'fillers' | 'hesitations' | 'stutters'>;
  /** Why each stage runs (autoid explains its choices). */
  reasons: Record<string, string>;
}

export function planEnhancement(flags: ReadonlySet<EnhanceFlag>, stats: InputStats | null): EnhancePlan {
  const reasons: Record<string, string> = {};
  const want = (stage: StageName, why: string) => {
    if (!reasons[stage]) reasons[stage] = why;
  };
  if (flags.has('mouth_sounds')) want('declick', 'mouth_sounds');
  if (flags.has('remove_noise')) want('denoise', 'remove_noise');
  if (flags.has('remove_reverb') || flags.has('remove_echo')) want('dereverb', flags.has('remove_reverb') ? 'remove_reverb' : 'remove_echo');
  const disfluencies = (['fillers', 'hesitations', 'stutters'] as const).filter((f) => flags.has(f));
  if (disfluencies.length) want('disfluency', disfluencies.join('+'));
  if (flags.has('long_silences')) want('long_silences', 'long_silences');
  if (flags.has('autoeq')) want('autoeq', 'autoeq');
  if (flags.has('normalize')) want('normalize', 'normalize');
  if (flags.has('studio_sound')) for (const s of ['declick', 'denoise', 'dereverb', 'autoeq', 'deesser', 'compressor', 'normalize'] as const) want(s, 'studio_sound');
  if (flags.has('autoid') && stats) {
    if (stats.snrDb < 30) want('denoise', `autoid: estimated SNR ${stats.snrDb.toFixed(0)} dB (< 30)`);
    if (stats.silenceRatio > 0.3) want('long_silences', `autoid: ${(stats.silenceRatio * 100).toFixed(0)}% of the input is silence`);
    want('autoeq', 'autoid: spectrum corrected toward the speech target (bounded to 6 dB)');
    const lufs = stats.loudness.integratedLufs;
    want('normalize', `autoid: loudness ${Number.isFinite(lufs) ? lufs.toFixed(1) : '-inf'} LUFS -> -16 LUFS`);
  }
  return { stages: STAGE_ORDER.filter((s) => reasons[s]), reasons, ...(disfluencies.length ? { disfluencies } : {}) };
}

export interface StageContext {
  sampleRate: number;
  channels: number;
  modelsDir: string;
  spectrum: Float64Array | null;
}

/** Fresh, stateful stages for one pass (normalize is added by the caller once loudness is known). */
export async function buildStages(plan: EnhancePlan, c: StageContext): Promise<{ stages: AudioStage[]; engines: string[] }> {
  const stages: AudioStage[] = [];
  const engines: string[] = [];
  for (const name of plan.stages) {
    switch (name) {
      case 'declick':
        stages.push(new DeclickStage(c.sampleRate, c.channels));
        engines.push('declick-ar');
        break;
      case 'denoise':
        if (onnxDenoiserAvailable(c.modelsDir, 'gtcrn')) {
          stages.push(await OnnxDenoiseStage.create(c.sampleRate, c.channels, { kind: 'gtcrn', modelsDir: c.modelsDir }));
          engines.push('gtcrn');
        } else {
          stages.push(await RnnoiseStage.create(c.sampleRate, c.channels));
          engines.push('rnnoise');
        }
        break;
      case 'dereverb':
        stages.push(new DereverbStage(c.sampleRate, c.channels));
        engines.push('wpe');
        break;
      case 'disfluency': {
        const d = new Set(plan.disfluencies ?? []);
        stages.push(await DisfluencyStage.create(c.sampleRate, c.channels, { fillers: d.has('fillers'), hesitations: d.has('hesitations'), stutters: d.has('stutters') }));
        engines.push('disfluency-dsp');
        break;
      }
      case 'long_silences':
        stages.push(new LongSilenceStage(await VadTracker.create(await WebRtcVad.create(), c.sampleRate), c.sampleRate, c.channels));
        engines.push('webrtc-vad');
        break;
      case 'autoeq': {
        const filters = c.spectrum ? designAutoEq(c.spectrum, c.sampleRate) : [];
        if (filters.length) stages.push(new BiquadStage('autoeq', filters, c.channels));
        engines.push('autoeq');
        break;
      }
      case 'deesser':
        stages.push(new DeEsserStage(c.sampleRate, c.channels));
        break;
      case 'compressor':
        stages.push(new CompressorStage(c.sampleRate));
        break;
      case 'normalize':
        break;
    }
  }
  return { stages, engines };
}

/** Frame-energy statistics for autoid (bounded memory: a histogram of 50 ms frame levels). */
export class EnergyStats implements AnalysisPass<{ snrDb: number; silenceRatio: number }> {
  private readonly hist = new Float64Array(200); // -120 .. +0 dB in 0.6 dB bins
  private acc = 0;
  private n = 0;
  private readonly frame: number;

  constructor(sampleRate: number) {
    this.frame = Math.round(sampleRate * 0.05);
  }

  push(block: AudioData): void {
    const chs = block.channels;
    const len = chs[0]?.length ?? 0;
    for (let i = 0; i < len; i++) {
      let s = 0;
      for (const ch of chs) s += ch[i]! * ch[i]!;
      this.acc += s / chs.length;
      if (++this.n === this.frame) {
        const db = 10 * Math.log10(this.acc / this.n + 1e-12);
        this.hist[Math.max(0, Math.min(199, Math.floor((db + 120) / 0.6)))]! += 1;
        this.acc = 0;
        this.n = 0;
      }
    }
  }

  private percentile(p: number): number {
    const total = this.hist.reduce((a, b) => a + b, 0);
    let run = 0;
    for (let b = 0; b < 200; b++) {
      run += this.hist[b]!;
      if (run >= p * total) return -120 + b * 0.6;
    }
    return 0;
  }

  result(): { snrDb: number; silenceRatio: number } {
    const total = this.hist.reduce((a, b) => a + b, 0);
    if (total === 0) return { snrDb: 0, silenceRatio: 1 };
    const loud = this.percentile(0.9);
    const quiet = this.percentile(0.1);
    let silent = 0;
    for (let b = 0; b < 200; b++) if (-120 + b * 0.6 < loud - 35) silent += this.hist[b]!;
    return { snrDb: loud - quiet, silenceRatio: silent / total };
  }
}
