import { AppError } from '../../domain/errors.js';
import { countCharacters, ttsCredits } from '../../domain/pricing.js';
import { publicStatus, type QueriedTask } from '../../domain/task.js';
import { EMOTION_NAMES } from '../../domain/vocabulary.js';
import type { VoiceLibrary } from '../../ports/voices.js';
import { hasSomethingToSay } from '../fields.js';
import { roundedProgress, type ApiKind, type KindApi, type PresentTools, type PreparedTask } from '../kind.js';
import { TtsCreateBody, TtsResult, type TtsParams, TtsQueryData, TTS_EXAMPLE } from './contract.js';

export class TtsKindApi implements KindApi<TtsCreateBody> {
  readonly kind = 'tts' as const;

  constructor(
    private readonly voices: VoiceLibrary,
    private readonly opts: { maxChars: number; defaultFormat: 'mp3' | 'wav' },
  ) {}

  async prepare(body: TtsCreateBody): Promise<PreparedTask> {
    const characters = countCharacters(body.text);
    if (!hasSomethingToSay(body.text)) {
      throw new AppError('INVALID_PARAMETERS', 'Invalid parameters: text: must contain something to say');
    }
    if (characters > this.opts.maxChars) {
      throw new AppError(
        'TEXT_TOO_LONG',
        `Text exceeds the maximum length: ${characters} characters, at most ${this.opts.maxChars}`,
      );
    }
    const voice = await this.voices.find(body.voice_id);
    if (!voice) {
      throw new AppError('INVALID_PARAMETERS', `Invalid parameters: voice_id: no voice ${body.voice_id} (see GET /audio/api/v1/api-keys/tts/voices)`);
    }
    if (body.language !== 'all' && body.language !== voice.language) {
      throw new AppError(
        'INVALID_PARAMETERS',
        `Invalid parameters: language: voice ${voice.id} speaks ${voice.language}, not ${body.language}`,
      );
    }
    // Flite's voices know English spelling only: other scripts come out as a blip, a paid result saying nothing.
    if (voice.name.startsWith('flite:') && !/[\p{Script=Latin}\p{N}]/u.test(body.text)) {
      throw new AppError('INVALID_PARAMETERS', `Invalid parameters: text: voice ${voice.id} reads Latin script only; choose an espeak voice of the text's language`);
    }
    const emotionName = EMOTION_NAMES[body.emotion] ?? 'auto';
    if (!voice.emotion.includes(emotionName)) {
      throw new AppError('INVALID_PARAMETERS', `Invalid parameters: emotion: voice ${voice.id} does not support ${emotionName}`);
    }
    const params: TtsParams = {
      v: 1,
      text: body.text,
      voiceId: voice.id,
      language: voice.language,
      emotion: body.emotion,
      speed: body.speed,
      format: body.format ?? this.opts.defaultFormat,
    };
    return { params, knownPrice: ttsCredits(body.text) };
  }

  async present(task: QueriedTask, tools: PresentTools): Promise<Record<string, unknown>> {
    const status = publicStatus(task.state);
    const data: Record<string, unknown> = { status, output: '' };
    if (status === 'success' && task.result) {
      const result = TtsResult.parse(task.result);
      data.output = await tools.fileUrl(result.outputKey);
      data.duration = result.durationSeconds;
      data.engine = task.engine;
      if (result.engineNote) data.engine_note = result.engineNote;
      data.voice = result.voiceKey;
      data.emotion = result.emotion;
      data.credits = task.charged;
    } else if (status === 'failed') {
      data.error = task.error;
    } else {
      data.progress = roundedProgress(task);
    }
    return data;
  }
}

export function ttsApiKind(api: TtsKindApi): ApiKind<typeof TtsCreateBody> {
  return {
    route: { kind: 'tts', tag: 'Text to speech', create: 'tts/task/create', get: 'tts/task/get', body: TtsCreateBody, createdIdField: 'job_id', queryIdField: 'global_id', queryData: TtsQueryData, example: TTS_EXAMPLE },
    api,
  };
}
