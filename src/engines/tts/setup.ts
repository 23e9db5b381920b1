import type { VoiceLibrary, VoiceRecord } from '../../ports/voices.js';
import { PiperEngine } from './piper.js';
import { KokoroEngine } from './kokoro.js';
import type { ModelEntry } from '../../models/catalog.js';
import { createTtsRegistry, type TtsRegistry } from './registry.js';

/**
 * Every TTS engine Soundry has: the built-ins (espeak, flite) and the neural engines, Kokoro and Piper, whose voices
 * are installed in MODELS_DIR, all phonemized by the same espeak instance.
 *
 * The registry lists Kokoro before Piper: a default voice is the first installed neural voice of the list (docs/api.md,
 * "Default voices"), so where both serve a language, Kokoro (the newer, better graded model) speaks by default.
 */
export function createTtsEngines(opts: {
  modelsDir: string; onnxThreads?: number; catalog?: readonly ModelEntry[]; executionProviders?: readonly string[];
  /** MODELS_AUTO_PULL: neural voices whose models are not installed are listed too, marked for download on first use. */
  autoPull?: boolean;
}): TtsRegistry {
  let registry: TtsRegistry | null = null;
  const neural = {
    modelsDir: opts.modelsDir,
    ...(opts.catalog ? { catalog: opts.catalog } : {}),
    intraOpThreads: opts.onnxThreads ?? 1,
    ...(opts.executionProviders ? { executionProviders: opts.executionProviders } : {}),
    listPullable: opts.autoPull ?? false,
    phonemize: (text: string, voice: string) => registry!.espeak.phonemizeIpa(text, voice),
    // The registry's reader: one kuromoji dictionary for the pipeline and Kokoro's Japanese voices.
    readJapanese: (text: string) => registry!.japanese.words(text),
  };
  registry = createTtsRegistry({ extraEngines: [new KokoroEngine(neural), new PiperEngine(neural)] });
  return registry;
}

/**
 * The API side's view of the voice library: listing never loads a synthesizer. The list is kept
 * for `refreshMs` so a create does not stat every model file; a model pulled by the CLI (another
 * process) shows up within that time.
 */
export function createVoiceLibrary(opts: { modelsDir: string; catalog?: readonly ModelEntry[]; autoPull?: boolean; refreshMs?: number; now?: () => number }): VoiceLibrary {
  const registry = createTtsEngines(opts);
  const now = opts.now ?? Date.now;
  const refreshMs = opts.refreshMs ?? 5000;
  let cached: { at: number; voices: Promise<VoiceRecord[]>; byId: Promise<Map<number, VoiceRecord>> } | null = null;
  const current = () => {
    if (!cached || now() - cached.at > refreshMs) {
      const voices = registry.listVoices();
      cached = { at: now(), voices, byId: voices.then((list) => new Map(list.map((v) => [v.id, v]))) };
      voices.catch(() => (cached = null));
    }
    return cached;
  };
  return {
    list: () => current().voices,
    async find(id) {
      return (await current().byId).get(id) ?? null;
    },
    // Looked up afresh (a stat per model), not from the cached list: a download that just finished must not be repeated.
    async modelsToDownload(id) {
      return (await registry.resolveVoice(id))?.voice.pullModels ?? [];
    },
  };
}
