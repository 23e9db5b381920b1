import type { AudioData } from '../../media/audio.js';
import type { ModelSource } from '../../models/verified.js';
import { RnnoiseStage, SpectralGateStage } from './denoise.js';
import { DeepFilterStage, deepFilterAvailable } from './deepfilter-stage.js';
import { OnnxDenoiseStage, onnxDenoiserAvailable, type OnnxDenoiser } from './onnx-denoise.js';
import { FrameLevels, type AnalysisPass, type AudioStage } from './stage.js';
import { SileroVad, sileroModelPath, WebRtcVad, type FrameVad } from './vad.js';

/**
 * Which denoiser and which VAD run, decided from what is installed and from measured evidence
 * (bench/results/enhance.md): DTLN is best on additive noise (+9 dB SI-SDR at 0 dB SNR) but the worst
 * engine on reverberant input (-0.9 dB, STOI -0.05); GTCRN helps in both; RNNoise is always there.
 *
 * DeepFilterNet3 comes first with auto wherever it can be had (installed, or pulled on first use by
 * src/kinds/enhance/models.ts): its authors publish PESQ 3.17 on VoiceBank+DEMAND (DeepFilterNet3 paper, the anchor
 * issue 28 names), and it is the only one of them that runs at 48 kHz full band, where DTLN and GTCRN (16 kHz models)
 * leave nothing above 8 kHz of a 44.1/48 kHz input. Measured here with the published archive on the 17 corpus pairs
 * (16 kHz, so full band does not count; PESQ-WB and STOI by pesq/pystoi through the harness, means), DFN3 / GTCRN /
 * DTLN / RNNoise: noisy 0-10 dB (9 pairs) PESQ 1.99 / 1.88 / 1.85 / 1.59, STOI 0.907 / 0.893 / 0.902 / 0.865, SI-SDR
 * 11.5 / 10.1 / 11.8 / 8.3 dB; reverberant (3) PESQ 1.54 / 1.59 / 1.33 / 1.46, STOI 0.908 / 0.890 / 0.843 / 0.886;
 * reverberant+noisy (3) PESQ 1.34 / 1.32 / 1.12 / 1.17, STOI 0.847 / 0.830 / 0.765 / 0.801. Where the others measure
 * better it is by one metric and little (DTLN's SI-SDR on additive noise +0.3 dB, at lower PESQ and STOI; GTCRN's
 * PESQ on 3 reverberant pairs +0.05, at lower STOI), so neither keeps an auto role over DFN3 when DFN3 can be had:
 * they are its fallbacks (not installed, download failed, refused by onnxruntime), chosen between as before by the
 * input's T60, and stay selectable by name. RNNoise (built in, no download) remains the offline fallback and the
 * reason says so.
 */

export const DENOISER_PREFERENCES = ['auto', 'deepfilternet3', 'rnnoise', 'dtln', 'gtcrn', 'spectral'] as const;
export type DenoiserPreference = (typeof DENOISER_PREFERENCES)[number];
export type DenoiserKind = 'deepfilternet3' | 'rnnoise' | 'dtln' | 'gtcrn' | 'spectral-gate';
/** The denoisers that come as downloadable models. */
export type NeuralDenoiser = OnnxDenoiser | 'deepfilternet3';

export function isNeuralDenoiser(kind: DenoiserKind): kind is NeuralDenoiser {
  return kind === 'dtln' || kind === 'gtcrn' || kind === 'deepfilternet3';
}

/**
 * DTLN only below this decay estimate. The estimate is crude (noise floors slow decays too): on the
 * constructed pairs clean speech measures 0.10-0.16 s, every reverberant file >= 0.26 s, noisy dry files
 * 0.20-0.47 s; 0.22 never sends a reverberant file to DTLN, at the price of GTCRN (RNNoise without GTCRN) on most
 * noisy ones.
 */
export const DTLN_MAX_T60 = 0.22;

export interface DenoiserChoice {
  kind: DenoiserKind;
  why: string;
}

/**
 * Why a neural denoiser that is wanted cannot be used although it may be catalogued: its automatic download failed,
 * or its verified file would not load. The choice then says so and tries the other model before the built-in one.
 */
export type DenoiserProblems = Partial<Record<NeuralDenoiser, string>>;

/** Which neural denoisers are verified on disk; DeepFilterNet3 absent means not installed. */
export type InstalledDenoisers = Readonly<Record<OnnxDenoiser, boolean> & { deepfilternet3?: boolean }>;

const LABEL: Record<NeuralDenoiser, string> = { dtln: 'DTLN', gtcrn: 'GTCRN', deepfilternet3: 'DeepFilterNet3' };
const DFN3_WHY = 'DeepFilterNet3, 48 kHz full band';

/**
 * The choice itself, from facts only (which models are installed, why any cannot be used, the input's T60), so it is
 * tested without files. Found from outside: with auto, a DTLN whose download failed left RNNoise although GTCRN could
 * be had; a model with a problem is now passed over for the other neural one, and the reason names both.
 */
export function decideDenoiser(
  pref: DenoiserPreference,
  installed: InstalledDenoisers,
  t60: number | null,
  dereverbAsked = false,
  problems: DenoiserProblems = {},
): DenoiserChoice {
  const usable = (k: NeuralDenoiser) => installed[k] === true && !problems[k];
  const notUsed = (k: NeuralDenoiser) => (problems[k] ? `${LABEL[k]} could not be used: ${problems[k]}` : `${LABEL[k]} not installed`);
  switch (pref) {
    case 'rnnoise':
      return { kind: 'rnnoise', why: 'ENHANCE_DENOISER=rnnoise' };
    case 'spectral':
      return { kind: 'spectral-gate', why: 'ENHANCE_DENOISER=spectral' };
    case 'dtln':
    case 'gtcrn':
    case 'deepfilternet3':
      if (usable(pref)) return { kind: pref, why: `ENHANCE_DENOISER=${pref}` };
      return usable('gtcrn') ? { kind: 'gtcrn', why: `${notUsed(pref)}; GTCRN` } : { kind: 'rnnoise', why: `${notUsed(pref)}; RNNoise (built in)` };
    case 'auto': {
      if (usable('deepfilternet3')) return { kind: 'deepfilternet3', why: `auto: ${DFN3_WHY}` };
      // Only a DeepFilterNet3 that was wanted and failed is worth naming: "not installed" is the plain offline case.
      const noDfn = problems.deepfilternet3 ? `${notUsed('deepfilternet3')}; ` : '';
      // DTLN only where the input is known to be dry: an asked dereverberation says it is not, and a T60 that could not
      // be estimated says nothing. This holds whether or not GTCRN is there (without it the alternative is RNNoise), so
      // the thread measures the T60 whenever DTLN is usable: a DTLN-only server once never ran DTLN, as nothing measured.
      if (usable('dtln') && !dereverbAsked && t60 !== null && t60 <= DTLN_MAX_T60) {
        return { kind: 'dtln', why: `auto: ${noDfn}estimated T60 ${t60.toFixed(2)} s <= ${DTLN_MAX_T60} s (dry): DTLN, best on additive noise` };
      }
      if (!installed.dtln && !installed.gtcrn && !problems.dtln && !problems.gtcrn) {
        return { kind: 'rnnoise', why: `auto: ${noDfn}no ${noDfn ? 'other ' : ''}neural denoiser installed; RNNoise (built in)` };
      }
      const avoided = 'DTLN avoided, worst on reverberant input';
      const noDtln = !usable('dtln')
        ? notUsed('dtln')
        : dereverbAsked
          ? `dereverberation requested (reverberant input): ${avoided}`
          : t60 === null
            ? `estimated T60 unknown (too few decays to tell): ${avoided}`
            : `estimated T60 ${t60.toFixed(2)} s > ${DTLN_MAX_T60} s (reverberant): ${avoided}`;
      if (usable('gtcrn')) return { kind: 'gtcrn', why: `auto: ${noDfn}${noDtln}; GTCRN${problems.dtln ? ' used instead' : ''}` };
      return { kind: 'rnnoise', why: `auto: ${noDfn}${noDtln}; ${notUsed('gtcrn')}; RNNoise (built in)` };
    }
  }
}

export function chooseDenoiser(pref: DenoiserPreference, modelsDir: string | ModelSource, t60: number | null, dereverbAsked = false, problems: DenoiserProblems = {}): DenoiserChoice {
  const installed = {
    dtln: onnxDenoiserAvailable(modelsDir, 'dtln'), gtcrn: onnxDenoiserAvailable(modelsDir, 'gtcrn'), deepfilternet3: deepFilterAvailable(modelsDir),
  };
  return decideDenoiser(pref, installed, t60, dereverbAsked, problems);
}

export interface CreatedDenoiser {
  stage: AudioStage;
  /** The engine that runs: the chosen one, or RNNoise when the chosen model would not load. */
  kind: DenoiserKind;
  /** Why the chosen model was not used (it is verified, yet onnxruntime refused it), naming the file. */
  fallback?: string;
}

/**
 * A verified model that onnxruntime still refuses (another opset, a provider that cannot run it) would fail the same
 * way on every retry: the stage runs on RNNoise instead and the note names the file, so the task still succeeds.
 */
export async function createDenoiser(kind: DenoiserKind, sampleRate: number, channels: number, modelsDir: string | ModelSource, executionProviders?: readonly string[]): Promise<CreatedDenoiser> {
  if (isNeuralDenoiser(kind)) {
    try {
      return { stage: await createNeural(kind, { sampleRate, channels, models: modelsDir, ...(executionProviders ? { executionProviders } : {}) }), kind };
    } catch (err) {
      return { stage: await RnnoiseStage.create(sampleRate, channels), kind: 'rnnoise', fallback: `${kind} not used: ${(err as Error).message}; RNNoise (built in)` };
    }
  }
  if (kind === 'spectral-gate') return { stage: new SpectralGateStage(sampleRate, channels), kind };
  return { stage: await RnnoiseStage.create(sampleRate, channels), kind };
}

interface DenoiserSetup {
  sampleRate: number;
  channels: number;
  models: string | ModelSource;
  executionProviders?: readonly string[];
  signal?: AbortSignal;
}

function createNeural(kind: NeuralDenoiser, c: DenoiserSetup): Promise<AudioStage> {
  const providers = c.executionProviders ? { executionProviders: c.executionProviders } : {};
  if (kind === 'deepfilternet3') return DeepFilterStage.create(c.sampleRate, c.channels, { models: c.models, ...providers, ...(c.signal ? { signal: c.signal } : {}) });
  return OnnxDenoiseStage.create(c.sampleRate, c.channels, { kind, modelsDir: c.models, ...providers });
}

/**
 * The denoise stage of a chain: the choice above, then the engine. With auto, a verified model that onnxruntime
 * refuses is one more problem and the choice is made again, so GTCRN still runs when DTLN will not load; a forced
 * model that will not load runs on RNNoise, as createDenoiser does.
 */
export async function createChosenDenoiser(
  pref: DenoiserPreference,
  c: DenoiserSetup,
  t60: number | null,
  dereverbAsked: boolean,
  problems: DenoiserProblems = {},
): Promise<{ stage: AudioStage; kind: DenoiserKind; why: string }> {
  const known: DenoiserProblems = { ...problems };
  for (;;) {
    const choice = chooseDenoiser(pref, c.models, t60, dereverbAsked, known);
    const neural = isNeuralDenoiser(choice.kind) ? choice.kind : null;
    if (pref === 'auto' && neural) {
      try {
        return { stage: await createNeural(neural, c), kind: neural, why: choice.why };
      } catch (err) {
        // Each pass adds a problem to a model that had none, so this ends after the three models at most.
        known[neural] = (err as Error).message;
        continue;
      }
    }
    const made = await createDenoiser(choice.kind, c.sampleRate, c.channels, c.models, c.executionProviders);
    return { stage: made.stage, kind: made.kind, why: made.fallback ? `${choice.why}; ${made.fallback}` : choice.why };
  }
}

/** Silero VAD when its model is installed and loads (fewer false speech frames in noise, bench), else WebRTC VAD. */
export async function createVad(modelsDir: string | ModelSource, executionProviders?: readonly string[]): Promise<{ vad: FrameVad; engine: string; fallback?: string }> {
  const silero = sileroModelPath(modelsDir);
  if (silero) {
    try {
      return { vad: await SileroVad.create(silero, executionProviders), engine: 'silero-vad' };
    } catch (err) {
      return { vad: await WebRtcVad.create(), engine: 'webrtc-vad', fallback: `silero_vad not used: ${(err as Error).message}` };
    }
  }
  return { vad: await WebRtcVad.create(), engine: 'webrtc-vad' };
}

/**
 * Blind reverberation-time estimate from the free decays of speech: after a syllable ends the level
 * falls no faster than the room lets it, so the steepest sustained 20 ms-frame decays (10th
 * percentile over 80 ms runs that fall by at least 8 dB) give 60 dB / rate ~ T60. Bounded memory:
 * a histogram of decay rates.
 */
export class DecayStats implements AnalysisPass<number | null> {
  private readonly frames: FrameLevels;
  private readonly levels = new Float64Array(8); // last 8 frame levels, dB (ring)
  private count = 0;
  private readonly hist = new Float64Array(200); // decay rates 0..1000 dB/s in 5 dB/s bins

  constructor(sampleRate: number) {
    this.frames = new FrameLevels(sampleRate, 0.02, (db) => this.endFrame(db));
  }

  push(block: AudioData): void {
    this.frames.push(block);
  }

  private endFrame(db: number): void {
    const L = this.levels;
    L[this.count & 7] = db;
    this.count++;
    if (this.count < 5) return;
    // A run of 5 frames (80 ms between ends) that falls monotonically by >= 8 dB, above digital silence.
    const at = (k: number) => L[(this.count - 5 + k) & 7]!;
    let mono = true;
    for (let k = 1; k < 5; k++) if (at(k) > at(k - 1) + 0.5) mono = false;
    const drop = at(0) - at(4);
    if (!mono || drop < 8 || at(0) < -90) return;
    const rate = drop / (4 * 0.02);
    this.hist[Math.min(199, Math.floor(rate / 5))]! += 1;
  }

  /** T60 in seconds, or null when the input has too few decays to tell. */
  result(): number | null {
    const total = this.hist.reduce((a, b) => a + b, 0);
    if (total < 5) return null;
    let run = 0;
    for (let b = 199; b >= 0; b--) {
      run += this.hist[b]!;
      if (run >= 0.1 * total) return 60 / ((b + 0.5) * 5);
    }
    return null;
  }
}
