/**
 * MODELS_AUTO_PULL for enhancement: the neural models a task's stages would use, downloaded on first use. The chain
 * then finds them verified (src/models/verified.ts) and picks them as if installed by hand; when a download fails it
 * uses the other neural denoiser if that one could be had, else the built-in engines (RNNoise, WebRTC VAD), and the
 * stage's reason says why.
 */
import { planEnhancement } from '../../engines/enhance/chain.js';
import type { DenoiserPreference, DenoiserProblems } from '../../engines/enhance/engine-choice.js';
import type { EnhanceFlag } from '../../domain/vocabulary.js';
import { MODEL_CATALOG, type ModelEntry } from '../../models/catalog.js';
import type { AutoPuller } from '../../models/auto-pull.js';
import { verifiedModelSync } from '../../models/verified.js';

/** Models per stage: `auto` needs both denoisers (DTLN on dry input, GTCRN on reverberant), a forced one only itself. */
function wantedModels(flags: readonly EnhanceFlag[], denoiser: DenoiserPreference): Partial<Record<'denoise' | 'long_silences', string[]>> {
  const stages = new Set<string>(planEnhancement(new Set(flags), null).stages);
  // autoid decides its stages from the input's statistics, which are not measured yet: it may need either.
  const autoid = flags.includes('autoid');
  const out: Partial<Record<'denoise' | 'long_silences', string[]>> = {};
  const denoisers = denoiser === 'auto' ? ['dtln', 'gtcrn'] : denoiser === 'dtln' || denoiser === 'gtcrn' ? [denoiser] : [];
  if ((stages.has('denoise') || stages.has('separate') || autoid) && denoisers.length) out.denoise = denoisers;
  if (stages.has('long_silences') || autoid) out.long_silences = ['silero_vad'];
  return out;
}

export interface EnhancePullOptions {
  modelsDir: string;
  catalog?: readonly ModelEntry[];
  baseUrl?: string;
  signal: AbortSignal;
  onProgress(fraction: number): void;
}

/** What the downloads left to say: per stage (Silero for long_silences), and per denoiser for the chain's choice. */
export interface EnhancePullOutcome {
  /** Stage -> why its model could not be installed, appended to that stage's reason. */
  notes: Record<string, string>;
  /** DTLN / GTCRN -> why it could not be installed: the denoiser choice passes it over for the other and says why. */
  denoisers: DenoiserProblems;
}

const bytesOf = (e: ModelEntry) => e.files.reduce((m, f) => m + f.sizeBytes, 0);

/**
 * Pulls what is missing, one model at a time and each on its own: auto's GTCRN is still fetched when DTLN's download
 * fails (found from outside: the first failure ended the stage's downloads, and the chain ran RNNoise without trying
 * GTCRN), and a DTLN that failed recently does not keep GTCRN from being tried.
 */
export async function pullEnhanceModels(puller: AutoPuller, flags: readonly EnhanceFlag[], denoiser: DenoiserPreference, opts: EnhancePullOptions): Promise<EnhancePullOutcome> {
  const catalog = opts.catalog ?? MODEL_CATALOG;
  const source = { modelsDir: opts.modelsDir, catalog };
  const missing = Object.entries(wantedModels(flags, denoiser)).flatMap(([stage, names]) =>
    names
      .flatMap((n) => catalog.filter((e) => e.name === n))
      .filter((e) => !verifiedModelSync(source, e.name).ok)
      .map((entry) => ({ stage, entry })),
  );
  const total = missing.reduce((n, m) => n + bytesOf(m.entry), 0);
  const out: EnhancePullOutcome = { notes: {}, denoisers: {} };
  let before = 0;
  for (const { stage, entry } of missing) {
    const from = before;
    const size = bytesOf(entry);
    const why = await puller.pull([entry], {
      modelsDir: opts.modelsDir, signal: opts.signal, ...(opts.baseUrl ? { baseUrl: opts.baseUrl } : {}),
      onProgress: (f) => opts.onProgress(total > 0 ? (from + f * size) / total : 1),
    });
    before += size;
    if (!why) continue;
    const note = `automatic download failed: ${why}`;
    if (entry.name === 'dtln' || entry.name === 'gtcrn') out.denoisers[entry.name] = note;
    else out.notes[stage] = out.notes[stage] ? `${out.notes[stage]}; ${note}` : note;
  }
  return out;
}
