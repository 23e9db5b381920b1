/**
 * First use of a voice whose engine runs on downloadable models (Kokoro): the models it lacks are pulled (through
 * the caller's MODELS_AUTO_PULL downloader), and when they cannot be had the task is spoken by a built-in voice of the
 * same language and gender with the reason kept for the result, rather than failing or retrying an "internal error".
 */
import type { EngineVoice, TtsEngine } from '../../ports/engines.js';
import type { ModelEntry } from '../../models/catalog.js';
import type { TtsRegistry } from './registry.js';
import { apiIdOf } from './voices.js';

/** An engine whose voices need catalog models on disk; `missingModels` lists those not installed (verified) now. */
export interface ModelBackedEngine extends TtsEngine {
  missingModels(voice: EngineVoice): Promise<ModelEntry[]>;
}

export function isModelBacked(engine: TtsEngine): engine is ModelBackedEngine {
  return typeof (engine as Partial<ModelBackedEngine>).missingModels === 'function';
}

/** Downloads and verifies entries; undefined when all are installed now, else why not (one sentence). */
export type PullModels = (entries: readonly ModelEntry[]) => Promise<string | undefined>;

export interface ProvisionedVoice {
  /** The voice to synthesize with: the one asked for, or the built-in stand-in. */
  voiceId: number;
  /** Why the asked-for engine did not speak (shown as the result's engine_note). */
  note?: string;
}

/**
 * The built-in voice that speaks for a neural one that cannot: espeak, same language and gender, preferring the same
 * accent (the second segment of the key: kokoro:en-gb:... -> espeak:en-gb:...).
 */
async function builtinStandIn(registry: TtsRegistry, voice: EngineVoice): Promise<number | null> {
  const espeak = registry.engines.get('espeak');
  if (!espeak) return null;
  const accent = voice.key.split(':')[1];
  const same = (await espeak.listVoices()).filter((v) => v.language === voice.language && v.gender === voice.gender);
  const pick = same.find((v) => v.key.split(':')[1] === accent) ?? same[0];
  return pick ? apiIdOf(pick) : null;
}

/** `pull` absent (MODELS_AUTO_PULL off): a voice missing its models falls back at once, naming what is wrong. */
export async function provisionVoice(registry: TtsRegistry, voiceId: number, pull?: PullModels): Promise<ProvisionedVoice> {
  const resolved = await registry.resolveVoice(voiceId);
  if (!resolved || !isModelBacked(resolved.engine)) return { voiceId };
  const missing = await resolved.engine.missingModels(resolved.voice);
  if (missing.length === 0) return { voiceId };
  const why = pull
    ? await pull(missing)
    : `${missing.map((m) => m.name).join(' and ')} not installed or not verified, and MODELS_AUTO_PULL is off`;
  if (why === undefined) return { voiceId };
  const standIn = await builtinStandIn(registry, resolved.voice);
  // No built-in voice of that language: nothing sensible can speak instead, so the reason is the failure.
  if (standIn === null) return { voiceId };
  return { voiceId: standIn, note: `${resolved.engine.id} voice ${resolved.voice.key} unavailable (${why}); spoken by the built-in engine instead` };
}
