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
 * MODELS_AUTO_PULL for a voice listed before its model is installed: downloads and verifies `model` (progress 0..1);
 * undefined when it is now installed, else why not in one readable sentence. Absent: such voices are not downloaded.
 */
export type PullVoiceModel = (model: string, ctx: EngineContext) => Promise<string | undefined>;

/** Of a task's progress, the share a first-use download takes (downloads dominate a short text's synthesis). */
const PULL_SHARE = 0.6;

/**
 * The single TTS entry point of the worker thread. Inputs were validated by the API, but the worker
 * re-checks what it depends on: a voice may have disappeared (model removed) since the task was queued.
 *
 * Language rule: the voice must speak the requested language; 'all' accepts the voice's own. We
 * refuse a mismatch instead of letting the voice's language win, because a Chinese voice reading
 * English text (or the reverse) is unintelligible, and a silent substitution would bill for garbage.
 */
export async function synthesize(job: TtsJob, registry: TtsRegistry, ctx: EngineContext, pull?: PullVoiceModel): Promise<TtsOutput> {
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
  if (voice.pullModel) {
    const why = pull
      ? await pull(voice.pullModel, { ...ctx, onProgress: (f) => ctx.onProgress(PULL_SHARE * f) })
      : `its model ${voice.pullModel} is not downloaded yet`;
    ctx.signal.throwIfAborted();
    if (why) {
      // The task still speaks, in the built-in voice of the same language and gender, and its result says so.
      const builtin = await registry.builtinVoice(voice.language, voice.gender);
      if (!builtin) throw new TaskFailure(`voice ${job.voiceId} cannot speak: ${why}`);
      engineNote = `voice ${job.voiceId} (${voice.displayName}) was not used: ${why}; spoken by the built-in voice ${builtin.id} (${builtin.voice.displayName})`;
      ({ voice, engine } = builtin);
    }
    const outer = ctx;
    ctx = { ...outer, onProgress: (f) => outer.onProgress(PULL_SHARE + (1 - PULL_SHARE) * f) };
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
