import { TaskFailure } from '../../domain/errors.js';
import type { AudioData } from '../../media/audio.js';
import type { EngineContext } from '../../ports/engines.js';
import { chooseAutoEmotion, emotionName } from './emotions.js';
import { synthesizeText } from './pipeline.js';
import type { TtsRegistry } from './registry.js';

export interface TtsJob {
  text: string;
  language: string;
  voiceId: number;
  emotion: number;
  speed: number;
  /**
   * Why the voice's neural model could not be had, when the process side tried to download it (MODELS_AUTO_PULL,
   * src/kinds/tts/voice-models.ts). A voice whose model is still not installed speaks with its built-in stand-in.
   */
  unavailable?: string;
}

export interface TtsOutput {
  audio: AudioData;
  engine: string;
  voiceKey: string;
  /** Why the voice asked for did not speak (its neural model could not be had): the built-in voice that did. */
  engineNote?: string;
  /** The emotion actually used: for auto, what was chosen from the text ("auto" when nothing stood out). */
  emotion: string;
}

/**
 * The single TTS entry point of the worker thread. Inputs were validated by the API, but the worker
 * re-checks what it depends on: a voice may have disappeared (model removed) since the task was queued.
 *
 * Language rule: the voice must speak the requested language; 'all' accepts the voice's own. We
 * refuse a mismatch instead of letting the voice's language win, because a Chinese voice reading
 * English text (or the reverse) is unintelligible, and a silent substitution would bill for garbage.
 */
/** "its model X is" / "its models X and Y are": the start of a reason naming what a voice still lacks. */
export function modelsPhrase(models: readonly string[]): string {
  return models.length === 1 ? `its model ${models[0]} is` : `its models ${models.join(' and ')} are`;
}

export async function synthesize(job: TtsJob, registry: TtsRegistry, ctx: EngineContext): Promise<TtsOutput> {
  const resolved = await registry.resolveVoice(job.voiceId);
  if (!resolved) throw new TaskFailure(`unknown voice ${job.voiceId} (see the voice list)`);
  let { voice, engine } = resolved;
  if (job.language !== 'all' && job.language !== voice.language) {
    throw new TaskFailure(`voice ${job.voiceId} speaks ${voice.language}, not ${job.language}`);
  }
  const requested = emotionName(job.emotion);
  if (requested === null) throw new TaskFailure(`unknown emotion id ${job.emotion} (0-8)`);
  if (!Number.isFinite(job.speed) || job.speed < 0.25 || job.speed > 4) {
    throw new TaskFailure(`speed ${job.speed} is outside 0.25-4`);
  }
  if (!/[\p{L}\p{N}]/u.test(job.text)) throw new TaskFailure('the text has nothing to say (no letters or digits)');
  let engineNote: string | undefined;
  if (voice.pullModels?.length) {
    // Its models are not installed (the download failed, or none was tried): the task still speaks, in the built-in
    // voice of the same language and gender, and its result says so. A file that failed verification is never opened.
    const why = job.unavailable ?? `${modelsPhrase(voice.pullModels)} not downloaded yet`;
    const builtin = await registry.builtinVoice(voice);
    if (!builtin) throw new TaskFailure(`voice ${job.voiceId} cannot speak: ${why}`);
    engineNote = `voice ${job.voiceId} (${voice.displayName}) was not used: ${why}; spoken by the built-in voice ${builtin.id} (${builtin.voice.displayName})`;
    ({ voice, engine } = builtin);
  }
  const emotionId = job.emotion === 0 ? chooseAutoEmotion(job.text, voice.language) : job.emotion;
  const audio = await synthesizeText(
    { text: job.text, language: voice.language, voice, emotionId, speed: job.speed },
    engine,
    ctx,
    { sonic: registry.sonic, japanese: registry.japanese },
  );
  return { audio, engine: engine.id, voiceKey: voice.key, emotion: emotionName(emotionId) ?? 'auto', ...(engineNote ? { engineNote } : {}) };
}
