import type { VoiceLibrary } from '../../ports/voices.js';
import { PiperEngine } from './piper.js';
import { createTtsRegistry, type TtsRegistry } from './registry.js';

/**
 * Every TTS engine Soundry has: the built-ins (espeak, flite) and Piper voices installed in
 * MODELS_DIR, phonemized by the same espeak instance.
 */
export function createTtsEngines(opts: { modelsDir: string; onnxThreads?: number }): TtsRegistry {
  let registry: TtsRegistry | null = null;
  const piper = new PiperEngine({
    modelsDir: opts.modelsDir,
    intraOpThreads: opts.onnxThreads ?? 1,
    phonemize: (text, voice) => registry!.espeak.phonemizeIpa(text, voice),
  });
  registry = createTtsRegistry({ extraEngines: [piper] });
  return registry;
}

/** The API side's view of the voice library: listing never loads a synthesizer. */
export function createVoiceLibrary(opts: { modelsDir: string }): VoiceLibrary {
  const registry = createTtsEngines(opts);
  return {
    list: () => registry.listVoices(),
    async find(id) {
      return (await registry.listVoices()).find((v) => v.id === id) ?? null;
    },
  };
}
