import type { VoiceLibrary, VoiceRecord } from '../../ports/voices.js';
import { PiperEngine } from './piper.js';
import { KokoroEngine } from './kokoro.js';
import type { ModelEntry } from '../../models/catalog.js';
import { createTtsRegistry, type TtsRegistry } from './registry.js';
import { isModelBacked } from './provision.js';
import { apiIdOf } from './voices.js';
import { KOKORO_DEFAULT_VOICES } from '../../models/catalog-kokoro.js';

/**
 * Every TTS engine Soundry has: the built-ins (espeak, flite), Piper voices installed in MODELS_DIR and Kokoro
 * voices (installed ones; with `autoPull`, every catalog voice, downloaded on first use), phonemized by the same
 * espeak instance.
 */
export function createTtsEngines(opts: { modelsDir: string; onnxThreads?: number; catalog?: readonly ModelEntry[]; executionProviders?: readonly string[]; autoPull?: boolean }): TtsRegistry {
  let registry: TtsRegistry | null = null;
  const piper = new PiperEngine({
    modelsDir: opts.modelsDir,
    ...(opts.catalog ? { catalog: opts.catalog } : {}),
    intraOpThreads: opts.onnxThreads ?? 1,
    ...(opts.executionProviders ? { executionProviders: opts.executionProviders } : {}),
    phonemize: (text, voice) => registry!.espeak.phonemizeIpa(text, voice),
  });
  const kokoro = new KokoroEngine({
    modelsDir: opts.modelsDir,
    ...(opts.catalog ? { catalog: opts.catalog } : {}),
    intraOpThreads: opts.onnxThreads ?? 1,
    ...(opts.executionProviders ? { executionProviders: opts.executionProviders } : {}),
    offerUninstalled: opts.autoPull ?? false,
    phonemize: (text, voice) => registry!.espeak.phonemizeIpa(text, voice),
  });
  registry = createTtsRegistry({ extraEngines: [piper, kokoro] });
  return registry;
}

/**
 * The API side's view of the voice library: listing never loads a synthesizer. The list is kept
 * for `refreshMs` so a create does not stat every model file; a model pulled by the CLI (another
 * process) shows up within that time.
 */
export function createVoiceLibrary(opts: { modelsDir: string; catalog?: readonly ModelEntry[]; refreshMs?: number; now?: () => number; autoPull?: boolean }): VoiceLibrary {
  const registry = createTtsEngines(opts);
  const now = opts.now ?? Date.now;
  const refreshMs = opts.refreshMs ?? 5000;
  let cached: { at: number; voices: Promise<VoiceRecord[]>; byId: Promise<Map<number, VoiceRecord>>; preferred: Promise<number[]> } | null = null;
  const current = () => {
    if (!cached || now() - cached.at > refreshMs) {
      const voices = registry.listVoices();
      const preferred = installedNeuralVoices(registry);
      cached = { at: now(), voices, byId: voices.then((list) => new Map(list.map((v) => [v.id, v]))), preferred };
      voices.catch(() => (cached = null));
      preferred.catch(() => (cached = null));
    }
    return cached;
  };
  return {
    list: () => current().voices,
    async find(id) {
      return (await current().byId).get(id) ?? null;
    },
    preferred: () => current().preferred,
  };
}

/**
 * Ids of the neural voices installed (verified) now, the catalog's default voices first (KOKORO_DEFAULT_VOICES), then
 * the others in list order. A voice merely offered for download (MODELS_AUTO_PULL) is not installed, so a default
 * never starts a download nobody asked for.
 */
async function installedNeuralVoices(registry: TtsRegistry): Promise<number[]> {
  const found: Array<{ id: number; rank: number }> = [];
  for (const engine of registry.engines.values()) {
    if (engine.id === 'espeak' || engine.id === 'flite') continue;
    for (const voice of await engine.listVoices()) {
      const id = apiIdOf(voice);
      if (id === null) continue;
      if (isModelBacked(engine) && (await engine.missingModels(voice)).length > 0) continue;
      const rank = KOKORO_DEFAULT_VOICES.findIndex((name) => voice.key.endsWith(`:${name}`));
      found.push({ id, rank: rank < 0 ? KOKORO_DEFAULT_VOICES.length : rank });
    }
  }
  // Array.prototype.sort is stable: equal ranks keep list order.
  return found.sort((a, b) => a.rank - b.rank).map((f) => f.id);
}
