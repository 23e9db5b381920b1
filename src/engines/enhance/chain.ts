import { tmpdir } from 'node:os';
import type { AudioData } from '../../media/audio.js';
import { FrameLevels, type AudioStage, type AnalysisPass } from './stage.js';
import { chooseDenoiser, createChosenDenoiser, createVad, type DenoiserPreference, type DenoiserProblems } from './engine-choice.js';
import { RnnoiseStage } from './denoise.js';
import { pickVocalEngine, SeparationStage } from './separate.js';
import type { SeparationEngine } from '../separation/engine.js';
import { DereverbStage } from './dereverb.js';
import { DeclickStage } from './declick.js';
import { LongSilenceStage } from './silences.js';
import { DisfluencyStage } from './fillers.js';
import { VadTracker, WebRtcVad } from './vad.js';
import { BiquadStage, CompressorStage, DeEsserStage, designAutoEq } from './eq.js';
import type { LoudnessResult } from './loudness.js';
import { MUSIC_PRESENT_SHARE } from './music-detect.js';

import type { EnhanceFlag } from '../../domain/vocabulary.js';
import type { ModelEntry } from '../../models/catalog.js';
import type { ModelSource } from '../../models/verified.js';

export type { EnhanceFlag };

/**
 * The one chain order, and why: clicks are repaired on the raw signal (denoisers smear them);
 * voice/music separation comes next, on the fullest signal (with keep_music the denoiser and
 * dereverberation then run inside it, on the voice only, and the music is mixed back after);
 * noise goes before dereverberation (WPE's prediction is biased by noise); fillers, hesitations and
 * stutters ('disfluency') are found on the cleaned voice (noise and reverberation smear the pitch and
 * cepstral stability they are detected by) and cut before long_silences (removing a filler leaves
 * two pauses side by side, which long_silences then shortens as one); silences are cut on the
 * cleaned signal (VAD is more reliable); EQ, de-essing and compression shape the voice; loudness
 * is last so nothing after it moves the level.
 */
export const STAGE_ORDER = ['declick', 'separate', 'denoise', 'dereverb', 'disfluency', 'long_silences', 'autoeq', 'deesser', 'compressor', 'normalize'] as const;
export type StageName = (typeof STAGE_ORDER)[number];

export interface InputStats {
  loudness: LoudnessResult;
  /** 90th minus 10th percentile of 50 ms frame energies, dB: a blind SNR estimate. */
  snrDb: number;
  /** Share of 50 ms frames more than 35 dB under the loudest decile. */
  silenceRatio: number;
  spectrum: Float64Array;
  /** Share of the pauses with music under them (music-detect.ts); absent when not analysed. */
  musicShare?: number;
  /** Blind T60 estimate in seconds (engine-choice.ts DecayStats); null when too few decays, absent when not analysed. */
  t60?: number | null;
}

/**
 * autoid dereverberates from this decay estimate up, but only at an SNR of AUTO_DEREVERB_MIN_SNR dB or
 * more: noise floors slow the measured decays too (dry noisy files measure 0.20-0.47 s), while dry clean
 * speech measures 0.09-0.18 s and reverberant clean speech 0.26-0.44 s (corpus and real recordings).
 */
export const AUTO_DEREVERB_MIN_T60 = 0.25;
export const AUTO_DEREVERB_MIN_SNR = 20;

export interface EnhancePlan {
  stages: StageName[];
  /** What `separate` outputs: the voice alone, or the cleaned voice over the kept music bed. */
  separation?: 'voice' | 'keep_music';
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
  // keep_music wins over remove_background_audio for the music; ambience goes either way (denoiser on the voice).
  let separation: EnhancePlan['separation'] = flags.has('keep_music') ? 'keep_music' : flags.has('remove_background_audio') ? 'voice' : undefined;
  // autoid on a voice over a music bed: the denoiser would take the music for noise and destroy it
  // (bench/results/enhance.md, keep_music (c)), so the voice is separated and cleaned alone, the music kept.
  const autoMusic = flags.has('autoid') && !separation && stats?.musicShare !== undefined && stats.musicShare >= MUSIC_PRESENT_SHARE;
  if (autoMusic) {
    separation = 'keep_music';
    want('separate', `autoid: music under the speech in ${(stats.musicShare! * 100).toFixed(0)}% of the pauses: speech cleaned alone, music kept`);
  }
  if (separation === 'keep_music') {
    want('separate', 'keep_music: voice separated from the music bed, cleaned alone, music mixed back');
    want('denoise', `${autoMusic ? 'autoid' : 'keep_music'}: noise removed from the separated voice only`);
  } else if (separation === 'voice') {
    want('separate', 'remove_background_audio: voice separated from music');
    want('denoise', 'remove_background_audio: ambience removed from the voice');
  }
  if (flags.has('remove_noise')) want('denoise', 'remove_noise');
  if (flags.has('remove_reverb') || flags.has('remove_echo')) want('dereverb', flags.has('remove_reverb') ? 'remove_reverb' : 'remove_echo');
  const disfluencies = (['fillers', 'hesitations', 'stutters'] as const).filter((f) => flags.has(f));
  if (disfluencies.length) want('disfluency', disfluencies.join('+'));
  if (flags.has('long_silences')) want('long_silences', 'long_silences');
  if (flags.has('autoeq')) want('autoeq', 'autoeq');
  if (flags.has('normalize')) want('normalize', 'normalize');
  if (flags.has('studio_sound')) for (const s of ['declick', 'denoise', 'dereverb', 'autoeq', 'deesser', 'compressor', 'normalize'] as const) want(s, 'studio_sound');
  if (flags.has('autoid') && stats && !Number.isFinite(stats.loudness.integratedLufs)) {
    // Digital silence or a signal under the -70 LUFS gate: no SNR, level or spectrum to act on.
    reasons.autoid = 'autoid: the input is silent (below the -70 LUFS gate of BS.1770): nothing to enhance';
  } else if (flags.has('autoid') && stats) {
    if (stats.snrDb < 30) want('denoise', `autoid: estimated SNR ${stats.snrDb.toFixed(0)} dB (< 30)`);
    const t60 = stats.t60;
    if (t60 != null && t60 >= AUTO_DEREVERB_MIN_T60 && stats.snrDb >= AUTO_DEREVERB_MIN_SNR) {
      want('dereverb', `autoid: estimated T60 ${t60.toFixed(2)} s (>= ${AUTO_DEREVERB_MIN_T60}) at SNR ${stats.snrDb.toFixed(0)} dB`);
    }
    if (stats.silenceRatio > 0.3) want('long_silences', `autoid: ${(stats.silenceRatio * 100).toFixed(0)}% of the input is silence`);
    want('autoeq', 'autoid: spectrum corrected toward the speech target (bounded to 6 dB)');
    const lufs = stats.loudness.integratedLufs;
    want('normalize', `autoid: loudness ${Number.isFinite(lufs) ? lufs.toFixed(1) : '-inf'} LUFS -> -16 LUFS`);
  }
  return { stages: STAGE_ORDER.filter((s) => reasons[s]), reasons, ...(separation ? { separation } : {}), ...(disfluencies.length ? { disfluencies } : {}) };
}

export interface StageContext {
  sampleRate: number;
  channels: number;
  modelsDir: string;
  /** The effective model catalog (with MODELS_CATALOG_FILE): a model is used only when verified against it. */
  catalog?: readonly ModelEntry[];
  /** ONNX_EXECUTION_PROVIDER's resolved providers for the denoisers and Silero VAD (default CPU). */
  executionProviders?: readonly string[];
  spectrum: Float64Array | null;
  /** ENHANCE_DENOISER (default auto). */
  denoiser?: DenoiserPreference;
  /** Why a wanted neural denoiser cannot be had (its automatic download failed): the choice says so and passes it over. */
  denoiserProblems?: DenoiserProblems;
  /** Blind reverberation estimate of the input (engine-choice.ts DecayStats), when analysed. */
  t60?: number | null;
  /** Separation engines to prefer over the built-in speech separator (neural ones, when installed). */
  separationEngines?: readonly SeparationEngine[];
  signal?: AbortSignal;
  tmpDir?: string;
}

/** Fresh, stateful stages for one pass (normalize is added by the caller once loudness is known). */
export async function buildStages(plan: EnhancePlan, c: StageContext): Promise<{ stages: AudioStage[]; engines: string[]; notes: Record<string, string> }> {
  const stages: AudioStage[] = [];
  const engines: string[] = [];
  const notes: Record<string, string> = {};
  // One memo per build: a read-only MODELS_DIR keeps no marker, and each choice below asks again.
  const models: ModelSource = { modelsDir: c.modelsDir, memo: new Map(), ...(c.catalog ? { catalog: c.catalog } : {}) };
  // With keep_music, denoise and dereverb act on the separated voice only (inside the separation stage).
  const voice: AudioStage[] | null = plan.separation === 'keep_music' ? [] : null;
  let separateAt = -1;
  const vocalEngine = pickVocalEngine(c.separationEngines);
  for (const name of plan.stages) {
    switch (name) {
      case 'declick':
        stages.push(new DeclickStage(c.sampleRate, c.channels));
        engines.push('declick-ar');
        break;
      case 'separate': {
        // Without a neural vocal model, a neural denoiser on the whole mix removes music and ambience from
        // speech better than the built-in separator followed by it (bench/results/enhance.md: DTLN +5.2 dB,
        // GTCRN +3.8 dB SI-SDR against +1.2/+0.9 dB), so voice isolation leaves the work to it.
        if (plan.separation === 'voice' && vocalEngine.engine.id === 'builtin-speech') {
          const denoiser = chooseDenoiser(c.denoiser ?? 'auto', models, c.t60 ?? null, plan.stages.includes('dereverb'), c.denoiserProblems);
          if (denoiser.kind === 'dtln' || denoiser.kind === 'gtcrn') {
            notes.separate = `skipped: no neural vocal model installed; ${denoiser.kind} on the whole mix removes the background better than the built-in separator`;
            break;
          }
        }
        separateAt = stages.length;
        engines.push(vocalEngine.engine.id);
        notes.separate = `${vocalEngine.engine.id} (model_type ${vocalEngine.modelType})`;
        break;
      }
      case 'denoise': {
        const made = await createChosenDenoiser(
          c.denoiser ?? 'auto',
          { sampleRate: c.sampleRate, channels: c.channels, models, ...(c.executionProviders ? { executionProviders: c.executionProviders } : {}) },
          c.t60 ?? null,
          plan.stages.includes('dereverb'),
          c.denoiserProblems,
        );
        (voice ?? stages).push(made.stage);
        engines.push(made.kind);
        notes.denoise = made.why;
        break;
      }
      case 'dereverb':
        (voice ?? stages).push(new DereverbStage(c.sampleRate, c.channels));
        engines.push('wpe');
        break;
      case 'disfluency': {
        const d = new Set(plan.disfluencies ?? []);
        stages.push(await DisfluencyStage.create(c.sampleRate, c.channels, { fillers: d.has('fillers'), hesitations: d.has('hesitations'), stutters: d.has('stutters') }));
        engines.push('disfluency-dsp');
        break;
      }
      case 'long_silences': {
        const { vad, engine, fallback } = await createVad(models, c.executionProviders);
        // WebRTC VAD hears noise as speech (at 5 dB SNR it found no pause at all on real recordings), so a
        // second one listens to an RNNoise-cleaned copy and a pause is wherever either hears none; Silero
        // is robust to noise on its own (bench/results/enhance.md).
        const second = engine === 'webrtc-vad' ? { stage: await RnnoiseStage.create(16000, 1), vad: await WebRtcVad.create() } : null;
        stages.push(new LongSilenceStage(await VadTracker.create(vad, c.sampleRate, second), c.sampleRate, c.channels));
        engines.push(engine);
        if (second) notes.long_silences = `${fallback ? `${fallback}; ` : ''}WebRTC VAD on the input and on an RNNoise-cleaned copy, speech where both hear it (the kept audio is not denoised by this stage)`;
        break;
      }
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
        // The stage itself is added by the caller once the loudness is measured.
        engines.push('r128-normalize');
        break;
    }
  }
  if (separateAt >= 0) {
    const sep = new SeparationStage(c.sampleRate, c.channels, {
      choice: vocalEngine,
      mode: plan.separation ?? 'voice',
      voiceStages: voice ?? [],
      signal: c.signal ?? new AbortController().signal,
      tmpDir: c.tmpDir ?? tmpdir(),
    });
    stages.splice(separateAt, 0, sep);
  }
  return { stages, engines, notes };
}

/** Frame-energy statistics for autoid (bounded memory: a histogram of 50 ms frame levels). */
export class EnergyStats implements AnalysisPass<{ snrDb: number; silenceRatio: number }> {
  private readonly hist = new Float64Array(200); // -120 .. +0 dB in 0.6 dB bins
  private readonly frames: FrameLevels;

  constructor(sampleRate: number) {
    this.frames = new FrameLevels(sampleRate, 0.05, (db) => {
      this.hist[Math.max(0, Math.min(199, Math.floor((db + 120) / 0.6)))]! += 1;
    });
  }

  push(block: AudioData): void {
    this.frames.push(block);
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
