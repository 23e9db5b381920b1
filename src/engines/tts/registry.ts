import type { EngineVoice, TtsEngine } from '../../ports/engines.js';
import { EspeakEngine } from './espeak.js';
import { FliteEngine } from './flite.js';
import { JapaneseReader } from './japanese.js';
import { SonicStretcher } from './sonic.js';
import { apiIdOf, toVoiceRecord, type VoiceRecord } from './voices.js';

export interface TtsRegistry {
  engines: Map<string, TtsEngine>;
  /** The espeak instance, also the phonemizer for phoneme-driven engines (Piper). */
  espeak: EspeakEngine;
  /** Shared helpers for the pipeline, so their WASM/dictionaries load once per registry. */
  sonic: SonicStretcher;
  japanese: JapaneseReader;
  listVoices(): Promise<VoiceRecord[]>;
  resolveVoice(id: number): Promise<{ voice: EngineVoice; engine: TtsEngine } | null>;
  /**
   * The built-in (espeak) voice a neural voice falls back to when its models cannot be had: same language and gender,
   * the same accent first where the neural voice's key names one as espeak does (kokoro:en-gb:bf_emma -> espeak:en-gb:f1),
   * else same language. Every spec language has espeak voices of both genders, so this is null only for a foreign key.
   */
  builtinVoice(neural: Pick<EngineVoice, 'language' | 'gender' | 'key'>): Promise<{ id: number; voice: EngineVoice; engine: TtsEngine } | null>;
}

/**
 * The voice library: built-in engines (espeak, flite) plus any extra engines, all addressed by the
 * numeric API id (built-in table, or the extra engine's own `apiId`). Voices without an id are not
 * offered; on an id clash the first engine wins (built-ins come first), so ids never change meaning.
 * Pass `espeak` to share one instance with an extra engine that phonemizes through it.
 */
export function createTtsRegistry(deps: { extraEngines?: TtsEngine[]; espeak?: EspeakEngine } = {}): TtsRegistry {
  const espeak = deps.espeak ?? new EspeakEngine();
  const engines = new Map<string, TtsEngine>();
  for (const engine of [espeak, new FliteEngine(), ...(deps.extraEngines ?? [])]) {
    if (engines.has(engine.id)) throw new Error(`two TTS engines named ${engine.id}`);
    engines.set(engine.id, engine);
  }

  async function catalogue(): Promise<Array<{ id: number; voice: EngineVoice; engine: TtsEngine }>> {
    const seen = new Set<number>();
    const out: Array<{ id: number; voice: EngineVoice; engine: TtsEngine }> = [];
    for (const engine of engines.values()) {
      for (const voice of await engine.listVoices()) {
        const id = apiIdOf(voice);
        if (id === null || seen.has(id)) continue;
        seen.add(id);
        out.push({ id, voice, engine });
      }
    }
    return out;
  }

  return {
    engines,
    espeak,
    sonic: new SonicStretcher(),
    japanese: new JapaneseReader(),
    async listVoices() {
      return (await catalogue()).map((e) => toVoiceRecord(e.voice, e.id));
    },
    async resolveVoice(id: number) {
      // Engine by engine in the catalogue's order (the first engine with an id has it), stopping at the hit: a
      // built-in voice must not list the neural engines' voices, which checks every one of their model files
      // (this runs for every TTS task on a worker's event loop: 7% of it under a create load, by perf).
      for (const engine of engines.values()) {
        for (const voice of await engine.listVoices()) if (apiIdOf(voice) === id) return { voice, engine };
      }
      return null;
    },
    async builtinVoice(neural) {
      // espeak, not flite: flite reads Latin script only, espeak speaks every spec language.
      const own = (await catalogue()).filter((e) => e.engine === espeak && e.voice.language === neural.language);
      const gendered = own.filter((e) => e.voice.gender === neural.gender);
      const accent = neural.key.split(':')[1];
      return gendered.find((e) => e.voice.key.split(':')[1] === accent) ?? gendered[0] ?? own[0] ?? null;
    },
  };
}
