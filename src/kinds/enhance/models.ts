/**
 * MODELS_AUTO_PULL for enhancement: the neural models a task's stages would use, downloaded on first use. The chain
 * then finds them verified (src/models/verified.ts) and picks them as if installed by hand; when a download fails it
 * runs on the built-in engines (RNNoise, WebRTC VAD) as before, and the stage's reason says why.
 */
import { planEnhancement } from '../../engines/enhance/chain.js';
import type { DenoiserPreference } from '../../engines/enhance/engine-choice.js';
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

/** Pulls what is missing; returns, per stage, why its model could not be installed (nothing when all went well). */
export async function pullEnhanceModels(puller: AutoPuller, flags: readonly EnhanceFlag[], denoiser: DenoiserPreference, opts: EnhancePullOptions): Promise<Record<string, string>> {
  const catalog = opts.catalog ?? MODEL_CATALOG;
  const source = { modelsDir: opts.modelsDir, catalog };
  const notes: Record<string, string> = {};
  const byStage = Object.entries(wantedModels(flags, denoiser)).map(([stage, names]) => ({
    stage,
    entries: names.flatMap((n) => catalog.filter((e) => e.name === n)).filter((e) => !verifiedModelSync(source, e.name).ok),
  }));
  const all = byStage.flatMap((s) => s.entries);
  const total = all.reduce((n, e) => n + e.files.reduce((m, f) => m + f.sizeBytes, 0), 0);
  let before = 0;
  for (const { stage, entries } of byStage) {
    if (entries.length === 0) continue;
    const size = entries.reduce((n, e) => n + e.files.reduce((m, f) => m + f.sizeBytes, 0), 0);
    const from = before;
    const why = await puller.pull(entries, {
      modelsDir: opts.modelsDir, signal: opts.signal, ...(opts.baseUrl ? { baseUrl: opts.baseUrl } : {}),
      onProgress: (f) => opts.onProgress(total > 0 ? (from + f * size) / total : 1),
    });
    before += size;
    if (why) notes[stage] = `automatic download failed: ${why}`;
  }
  return notes;
}
