/**
 * MODELS_AUTO_PULL for enhancement: the neural models a task's stages would use, downloaded on first use. The chain
 * then finds them verified (src/models/verified.ts) and picks them as if installed by hand; when a download fails it
 * uses the other neural denoiser if that one could be had, else the built-in engines (RNNoise, WebRTC VAD), and the
 * stage's reason says why. With auto the denoiser pulled is DeepFilterNet3 (engine-choice.ts says why it comes first);
 * DTLN and GTCRN are pulled only when its download fails, as the fallbacks they are.
 */
import { planEnhancement } from '../../engines/enhance/chain.js';
import type { DenoiserPreference, DenoiserProblems, NeuralDenoiser } from '../../engines/enhance/engine-choice.js';
import type { EnhanceFlag } from '../../domain/vocabulary.js';
import { MODEL_CATALOG, type ModelEntry } from '../../models/catalog.js';
import type { AutoPuller } from '../../models/auto-pull.js';
import { verifiedModelSync } from '../../models/verified.js';
import { dereverbPullPlan, type DereverbPreference } from '../../engines/enhance/learned-dereverb.js';

const NEURAL: readonly string[] = ['deepfilternet3', 'dtln', 'gtcrn'] satisfies readonly NeuralDenoiser[];
const isNeural = (name: string): name is NeuralDenoiser => NEURAL.includes(name);

/**
 * Models per stage: `auto` wants DeepFilterNet3, and DTLN and GTCRN (DTLN on dry input, GTCRN on reverberant) only as
 * `fallback`, pulled when DeepFilterNet3's download fails; a forced denoiser wants only itself.
 */
function wantedModels(flags: readonly EnhanceFlag[], denoiser: DenoiserPreference): { wanted: Partial<Record<'denoise' | 'long_silences', string[]>>; fallback: string[] } {
  const stages = new Set<string>(planEnhancement(new Set(flags), null).stages);
  // autoid decides its stages from the input's statistics, which are not measured yet: it may need either.
  const autoid = flags.includes('autoid');
  const wanted: Partial<Record<'denoise' | 'long_silences', string[]>> = {};
  const denoisers = denoiser === 'auto' ? ['deepfilternet3'] : isNeural(denoiser) ? [denoiser] : [];
  const denoises = stages.has('denoise') || stages.has('separate') || autoid;
  if (denoises && denoisers.length) wanted.denoise = denoisers;
  if (stages.has('long_silences') || autoid) wanted.long_silences = ['silero_vad'];
  return { wanted, fallback: denoises && denoiser === 'auto' ? ['dtln', 'gtcrn'] : [] };
}

export interface EnhancePullOptions {
  modelsDir: string;
  catalog?: readonly ModelEntry[];
  baseUrl?: string;
  signal: AbortSignal;
  onProgress(fraction: number): void;
  /**
   * The learned dereverberation model is pulled only for remove_reverb and studio_sound, never for autoid (whose
   * stages are not known yet: 913 MB for a stage that may not run) nor remove_echo alone (WPE serves it), and only
   * when it would run: dereverbPullPlan rules it out for long input on CPU alone.
   */
  dereverb?: { preference: DereverbPreference; inputSeconds: number; cpuMaxSeconds: number; executionProviders?: readonly string[] };
}

/** What the downloads left to say: per stage (Silero for long_silences), and per denoiser for the chain's choice. */
export interface EnhancePullOutcome {
  /** Stage -> why its model could not be installed, appended to that stage's reason. */
  notes: Record<string, string>;
  /** DeepFilterNet3 / DTLN / GTCRN -> why it could not be installed: the denoiser choice passes it over and says why. */
  denoisers: DenoiserProblems;
  /** Why the learned dereverberation model could not be installed: dereverb then runs WPE and says why. */
  dereverbProblem?: string;
}

const bytesOf = (e: ModelEntry) => e.files.reduce((m, f) => m + f.sizeBytes, 0);

/**
 * Pulls what is missing, one model at a time and each on its own: auto's GTCRN is still fetched when DTLN's download
 * fails (found from outside: the first failure ended the stage's downloads, and the chain ran RNNoise without trying
 * GTCRN), and a DTLN that failed recently does not keep GTCRN from being tried. The fallback denoisers join the list
 * only after DeepFilterNet3's download failed, so a server that can reach it downloads nothing it will not use.
 */
export async function pullEnhanceModels(puller: AutoPuller, flags: readonly EnhanceFlag[], denoiser: DenoiserPreference, opts: EnhancePullOptions): Promise<EnhancePullOutcome> {
  const catalog = opts.catalog ?? MODEL_CATALOG;
  const source = { modelsDir: opts.modelsDir, catalog };
  const { wanted, fallback } = wantedModels(flags, denoiser);
  const missingOf = (stage: string, names: readonly string[]) => names
    .flatMap((n) => catalog.filter((e) => e.name === n))
    .filter((e) => !verifiedModelSync(source, e.name).ok)
    .map((entry) => ({ stage, entry }));
  const missing = Object.entries(wanted).flatMap(([stage, names]) => missingOf(stage, names));
  if (opts.dereverb && (flags.includes('remove_reverb') || flags.includes('studio_sound'))) {
    const { preference, inputSeconds, cpuMaxSeconds, executionProviders } = opts.dereverb;
    const plan = dereverbPullPlan(source, { preference, inputSeconds, cpuMaxSeconds, ...(executionProviders ? { executionProviders } : {}) });
    missing.push(...plan.map((entry) => ({ stage: 'dereverb', entry })));
  }
  const out: EnhancePullOutcome = { notes: {}, denoisers: {} };
  let total = missing.reduce((n, m) => n + bytesOf(m.entry), 0);
  let before = 0;
  // Fallbacks added after a failure enlarge the total: progress holds until they catch up rather than going back.
  let shown = 0;
  for (let i = 0; i < missing.length; i++) {
    const { stage, entry } = missing[i]!;
    const from = before;
    const size = bytesOf(entry);
    const why = await puller.pull([entry], {
      modelsDir: opts.modelsDir, signal: opts.signal, ...(opts.baseUrl ? { baseUrl: opts.baseUrl } : {}),
      onProgress: (f) => opts.onProgress((shown = Math.max(shown, total > 0 ? Math.min(1, (from + f * size) / total) : 1))),
    });
    before += size;
    if (!why) continue;
    const note = `automatic download failed: ${why}`;
    if (isNeural(entry.name)) out.denoisers[entry.name] = note;
    else if (stage === 'dereverb') out.dereverbProblem = `${entry.name}: ${note}`;
    else out.notes[stage] = out.notes[stage] ? `${out.notes[stage]}; ${note}` : note;
    if (entry.name === 'deepfilternet3' && fallback.length) {
      // Right after it, so the progress stays in order: the fallbacks are fetched before the stages that follow.
      const more = missingOf(stage, fallback);
      missing.splice(i + 1, 0, ...more);
      total += more.reduce((n, m) => n + bytesOf(m.entry), 0);
    }
  }
  return out;
}
