import { tmpdir } from 'node:os';
import type { AudioStage } from './stage.js';
import { chooseDenoiser, createChosenDenoiser, createVad, isNeuralDenoiser, type DenoiserPreference, type DenoiserProblems } from './engine-choice.js';
import { RnnoiseStage } from './denoise.js';
import { pickVocalEngine, SeparationStage } from './separate.js';
import type { SeparationEngine } from '../separation/engine.js';
import { createDereverbStage, type DereverbPreference } from './learned-dereverb.js';
import { DeclickStage } from './declick.js';
import { LongSilenceStage } from './silences.js';
import { DisfluencyStage } from './fillers.js';
import { AllVad, VadTracker, VOICING_HANGOVER_S, VoicingVad, WebRtcVad } from './vad.js';
import { BiquadStage, CompressorStage, DeEsserStage, designAutoEq } from './eq.js';
import type { LoudnessResult } from './loudness.js';
import { MUSIC_PRESENT_SHARE } from './music-detect.js';
import type { NoiseProfile } from './detect.js';
import { humNotches, type HumProfile } from './detect-hum.js';

import type { EnhanceFlag } from '../../domain/vocabulary.js';
import type { ModelEntry } from '../../models/catalog.js';
import type { ModelSource } from '../../models/verified.js';

export type { EnhanceFlag };

/**
 * The one chain order, and why: clicks are repaired on the raw signal (denoisers smear them); mains hum is notched
 * out next (its lines are sharpest before anything else touches them, and a denoiser leaves a steady tone half done);
 * voice/music separation comes next, on the fullest signal (with keep_music the denoiser and
 * dereverberation then run inside it, on the voice only, and the music is mixed back after);
 * noise goes before dereverberation (WPE's prediction is biased by noise); fillers, hesitations and
 * stutters ('disfluency') are found on the cleaned voice (noise and reverberation smear the pitch and
 * cepstral stability they are detected by) and cut before long_silences (removing a filler leaves
 * two pauses side by side, which long_silences then shortens as one); silences are cut on the
 * cleaned signal (VAD is more reliable); EQ, de-essing and compression shape the voice; loudness
 * is last so nothing after it moves the level.
 */
export const STAGE_ORDER = ['declick', 'dehum', 'separate', 'denoise', 'dereverb', 'disfluency', 'long_silences', 'autoeq', 'deesser', 'compressor', 'normalize'] as const;
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
  /** Noise floor, its spectrum and steadiness, and clipping (detect.ts); absent when not analysed. */
  noise?: NoiseProfile;
  /** Mains hum (detect-hum.ts); absent when not analysed. */
  hum?: HumProfile;
  /** The loudness normalize aims at, LUFS (-16 when absent): how far the floor is lifted with the voice. */
  targetLufs?: number;
}

/**
 * autoid's ear (detect.ts figures, bench/results/enhance-autoid.md). A floor whose band powers spread less than
 * STEADY_FLOOR_SPREAD_DB between their 5th and 30th percentiles is a stationary noise (the corpus noises measure
 * 2-6 dB, the JFK recording 7 dB); the gaps of clean speech spread 15-28 dB and reverberant speech 9-22 dB.
 */
export const STEADY_FLOOR_SPREAD_DB = 8;
/** ACX's noise-floor limit: a steady floor above this, A-weighted, once levelled to the target is heard in the pauses. */
export const AUDIBLE_FLOOR_DBFS = -60;
/** Speech this close to its noise floor (detect.ts gap) is denoised whatever the floor is. */
export const AUTO_DENOISE_MAX_GAP_DB = 25;
/** A floor with at least this share of white noise's power above 2 kHz is called a broadband hiss. */
export const HISS_SHARE = 0.3;
/** Hum lines whose summed power, once levelled, is under this are left alone. */
export const AUDIBLE_HUM_DBFS = -70;
/** Flat tops on more than this share of the samples are reported as clipping. */
export const CLIPPED_SHARE = 1e-4;

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
  /** The hum lines `dehum` notches out, Hz. */
  dehum?: number[];
  /** remove_echo without remove_reverb: dereverb predicts from far enough back to reach discrete echoes. */
  echo?: boolean;
}

export function planEnhancement(flags: ReadonlySet<EnhanceFlag>, stats: InputStats | null): EnhancePlan {
  const reasons: Record<string, string> = {};
  const want = (stage: StageName, why: string) => {
    if (!reasons[stage]) reasons[stage] = why;
  };
  let dehum: number[] | undefined;
  if (flags.has('mouth_sounds')) want('declick', 'mouth_sounds');
  // keep_music wins over remove_background_audio for the music; ambience goes either way (denoiser on the voice).
  let separation: EnhancePlan['separation'] = flags.has('keep_music') ? 'keep_music' : flags.has('remove_background_audio') ? 'voice' : undefined;
  // autoid on a voice over a music bed: the denoiser would take the music for noise and destroy it
  // (bench/results/enhance.md, keep_music (c)), so the voice is separated and cleaned alone, the music kept.
  // Mains hum is a row of steady tonal peaks, which the music detector reads as a bed (speechbrain's noise1, a 50 Hz hum
  // with odd harmonics, reads 75% music alone); separating it cost the corpus pair 0.6 PESQ against denoising it
  // (bench/results/enhance-autoid.md), so with hum heard the music share is not trusted.
  const humHeard = flags.has('autoid') && !!stats && heardHum(stats);
  const autoMusic = flags.has('autoid') && !separation && stats?.musicShare !== undefined && stats.musicShare >= MUSIC_PRESENT_SHARE && !humHeard;
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
  const echo = flags.has('remove_echo') && !flags.has('remove_reverb') && !flags.has('studio_sound');
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
    const notes = stats.noise ? listen(stats, want) : [];
    if (!stats.noise) {
      // Without detect.ts's analysis (older callers): the blind SNR and T60 rules alone.
      if (stats.snrDb < 30) want('denoise', `autoid: estimated SNR ${stats.snrDb.toFixed(0)} dB (< 30)`);
      const t60 = stats.t60;
      if (t60 != null && t60 >= AUTO_DEREVERB_MIN_T60 && stats.snrDb >= AUTO_DEREVERB_MIN_SNR) {
        want('dereverb', `autoid: estimated T60 ${t60.toFixed(2)} s (>= ${AUTO_DEREVERB_MIN_T60}) at SNR ${stats.snrDb.toFixed(0)} dB`);
      }
    }
    const hum = stats.hum;
    if (hum && humHeard) {
      if (stats.musicShare !== undefined && stats.musicShare >= MUSIC_PRESENT_SHARE) notes.push(`the music detector's ${(stats.musicShare * 100).toFixed(0)}% is taken for the hum's harmonics: not separated`);
      want('dehum', `autoid: ${hum.mainsHz} Hz mains hum (lines at ${hum.lines.map((l) => l.hz).join(', ')} Hz, up to ${Math.max(...hum.lines.map((l) => l.prominenceDb)).toFixed(0)} dB above their neighbourhood): notched out`);
      dehum = hum.lines.map((l) => l.hz);
    }
    if (stats.silenceRatio > 0.3) want('long_silences', `autoid: ${(stats.silenceRatio * 100).toFixed(0)}% of the input is silence`);
    if (stats.noise && reasons.denoise?.startsWith('autoid')) {
      // The EQ is designed from the input's long-term spectrum, which on noisy input is the noise's as much as the
      // voice's: after the denoiser it corrects a colour that is gone. Measured on the noisy pairs (RNNoise): the EQ
      // took 2-15 dB of SI-SDR off the denoised voice (bench/results/enhance-autoid.md).
      notes.push('autoeq skipped: the spectrum it would correct was measured with the noise in it');
    } else want('autoeq', 'autoid: spectrum corrected toward the speech target (bounded to 6 dB)');
    const lufs = stats.loudness.integratedLufs;
    want('normalize', `autoid: loudness ${Number.isFinite(lufs) ? lufs.toFixed(1) : '-inf'} LUFS -> ${stats.targetLufs ?? -16} LUFS`);
    if (notes.length) reasons.autoid = `autoid: ${notes.join('; ')}`;
  }
  return {
    stages: STAGE_ORDER.filter((s) => reasons[s]), reasons, ...(separation ? { separation } : {}), ...(disfluencies.length ? { disfluencies } : {}),
    ...(dehum && reasons.dehum ? { dehum } : {}), ...(echo && reasons.dereverb ? { echo } : {}),
  };
}

/** Hum that levelling leaves audible (detect-hum.ts lines). */
function heardHum(stats: InputStats): boolean {
  const hum = stats.hum;
  return !!hum?.mainsHz && hum.lines.length > 0 && hum.levelDbfs + levelGain(stats) > AUDIBLE_HUM_DBFS;
}

/** dB that normalize will add (the floor and any hum rise with the voice). */
function levelGain(stats: InputStats): number {
  const lufs = stats.loudness.integratedLufs;
  return Number.isFinite(lufs) ? (stats.targetLufs ?? -16) - lufs : 0;
}

/**
 * autoid's denoise and dereverb choices from detect.ts's noise profile, as a person listening would make them: a steady
 * floor that will be heard once the voice is levelled gets denoised, and so does speech barely above its floor; long
 * decays are the room's only where the floor is not a steady noise (a noise floor slows the measured decays too).
 * Returns notes for `reasons.autoid` (what was heard but not acted on).
 */
function listen(stats: InputStats, want: (stage: StageName, why: string) => void): string[] {
  const n = stats.noise!;
  const notes: string[] = [];
  const gain = levelGain(stats);
  const steady = n.spreadDb < STEADY_FLOOR_SPREAD_DB;
  const heard = n.floorDbA + gain;
  const kind = n.hissShare >= HISS_SHARE ? 'broadband hiss' : 'noise (mostly under 2 kHz)';
  const gap = n.snrDb.toFixed(0);
  if (steady && heard > AUDIBLE_FLOOR_DBFS) {
    want('denoise', `autoid: steady ${kind} ${gap} dB under the speech, at ${heard.toFixed(0)} dB(A) FS once levelled (heard in the pauses: above ${AUDIBLE_FLOOR_DBFS} dBFS, ACX's noise floor limit, here A-weighted)`);
  } else if (n.snrDb < AUTO_DENOISE_MAX_GAP_DB) {
    want('denoise', `autoid: speech only ${gap} dB above its noise floor (< ${AUTO_DENOISE_MAX_GAP_DB})`);
  } else if (stats.snrDb < 30) {
    want('denoise', `autoid: quiet frames only ${stats.snrDb.toFixed(0)} dB under the loud ones (< 30): noise in the pauses`);
  } else {
    notes.push(`noise floor ${heard.toFixed(0)} dB(A) FS once levelled, ${gap} dB under the speech: left alone`);
  }
  const t60 = stats.t60;
  if (t60 === null) notes.push('reverberation not measured (too few clean decays, as in far-field or noisy recordings): not dereverberated; remove_reverb asks for it');
  if (t60 != null && t60 >= AUTO_DEREVERB_MIN_T60) {
    if (!steady) want('dereverb', `autoid: estimated T60 ${t60.toFixed(2)} s (>= ${AUTO_DEREVERB_MIN_T60}) over a floor that is no steady noise (its band levels spread ${n.spreadDb.toFixed(0)} dB): the room's reverberation`);
    else notes.push(`decays measure T60 ${t60.toFixed(2)} s, but a steady noise floor slows them as much as a room would: not dereverberated`);
  }
  if (n.clippedShare > CLIPPED_SHARE) {
    notes.push(`clipping: ${(n.clippedShare * 100).toFixed(2)}% of the samples sit in flat tops at ${n.clipLevelDbfs?.toFixed(1)} dBFS; the chain has no declipper, so they stay (normalize's limiter keeps the peaks under the ceiling)`);
  }
  const lufs = stats.loudness.integratedLufs;
  if (Number.isFinite(lufs) && Math.abs(gain) >= 20) notes.push(`level: ${lufs.toFixed(1)} LUFS needs ${gain.toFixed(0)} dB of gain, which lifts the floor with it`);
  return notes;
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
  /** ENHANCE_DEREVERB (default auto: the learned model when installed and, on CPU alone, the input short enough). */
  dereverb?: DereverbPreference;
  /** Why the learned dereverberation model cannot be had (its automatic download failed). */
  dereverbProblem?: string;
  /** The input's length and ENHANCE_DEREVERB_CPU_MAX_SECONDS: longer input on CPU alone gets WPE, with the reason. */
  inputSeconds?: number;
  dereverbCpuMaxSeconds?: number;
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
      case 'dehum': {
        const notches = humNotches((plan.dehum ?? []).map((hz) => ({ hz })), c.sampleRate);
        if (notches.length) stages.push(new BiquadStage('dehum', notches, c.channels));
        engines.push('notch');
        break;
      }
      case 'separate': {
        // Without a neural vocal model, a neural denoiser on the whole mix removes music and ambience from
        // speech better than the built-in separator followed by it (bench/results/enhance.md: DTLN +5.2 dB,
        // GTCRN +3.8 dB SI-SDR against +1.2/+0.9 dB), so voice isolation leaves the work to it.
        if (plan.separation === 'voice' && vocalEngine.engine.id === 'builtin-speech') {
          const denoiser = chooseDenoiser(c.denoiser ?? 'auto', models, c.t60 ?? null, plan.stages.includes('dereverb'), c.denoiserProblems);
          if (isNeuralDenoiser(denoiser.kind)) {
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
          {
            sampleRate: c.sampleRate, channels: c.channels, models,
            ...(c.executionProviders ? { executionProviders: c.executionProviders } : {}), ...(c.signal ? { signal: c.signal } : {}),
          },
          c.t60 ?? null,
          plan.stages.includes('dereverb'),
          c.denoiserProblems,
        );
        (voice ?? stages).push(made.stage);
        engines.push(made.kind);
        notes.denoise = made.why;
        break;
      }
      case 'dereverb': {
        // remove_echo alone goes to WPE predicting from 0.25 s back: it reaches discrete echoes (+2.7 to +3.7 dB SI-SDR
        // on corpus speech with 100-500 ms echoes, bench/results/dereverb.md), while the learned model was trained on
        // reverberation only and its effect on echoes is unmeasured.
        const made = await createDereverbStage({
          sampleRate: c.sampleRate, channels: c.channels, models,
          ...(c.executionProviders ? { executionProviders: c.executionProviders } : {}), ...(c.signal ? { signal: c.signal } : {}),
          preference: plan.echo ? 'wpe' : (c.dereverb ?? 'auto'), echo: plan.echo === true,
          ...(c.dereverbProblem ? { problem: c.dereverbProblem } : {}),
          ...(c.inputSeconds !== undefined && c.dereverbCpuMaxSeconds !== undefined ? { inputSeconds: c.inputSeconds, cpuMaxSeconds: c.dereverbCpuMaxSeconds } : {}),
        });
        (voice ?? stages).push(made.stage);
        engines.push(made.kind === 'wpe' ? 'wpe' : `roformer-dereverb:${made.model}`);
        notes.dereverb = plan.echo ? `WPE predicting from 0.25 s back, which reaches discrete echoes` : made.why;
        break;
      }
      case 'disfluency': {
        const d = new Set(plan.disfluencies ?? []);
        stages.push(await DisfluencyStage.create(c.sampleRate, c.channels, { fillers: d.has('fillers'), hesitations: d.has('hesitations'), stutters: d.has('stutters') }));
        engines.push('disfluency-dsp');
        break;
      }
      case 'long_silences': {
        const { vad, engine, fallback } = await createVad(models, c.executionProviders);
        // WebRTC VAD hears noise as speech (at 5 dB SNR it found no pause at all on real recordings), so a second
        // opinion listens to an RNNoise-cleaned copy and a pause is wherever either hears none. On that copy WebRTC VAD
        // alone still heard RNNoise's residual as speech under 0-5 dB of noise (2-4 s of 17 s of pauses found); voicing,
        // widened by VOICING_HANGOVER_S, finds 18 s there with no speech lost, as Silero does (bench/results/enhance-autoid.md).
        // Silero is robust to noise on its own.
        const second = engine === 'webrtc-vad'
          ? { stage: await RnnoiseStage.create(16000, 1), vad: new AllVad([await WebRtcVad.create(), new VoicingVad()]), dilateFrames: Math.round(VOICING_HANGOVER_S / 0.03) }
          : null;
        stages.push(new LongSilenceStage(await VadTracker.create(vad, c.sampleRate, second), c.sampleRate, c.channels));
        engines.push(engine);
        if (second) notes.long_silences = `${fallback ? `${fallback}; ` : ''}WebRTC VAD on the input, and WebRTC VAD with voicing on an RNNoise-cleaned copy: speech where both hear it (the kept audio is not denoised by this stage)`;
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
