import { z } from 'zod';
import { EMOTION_NAMES, TTS_LANGUAGES } from '../../domain/vocabulary.js';
import { int, num, versioned } from '../fields.js';

/** POST tts/task/create. */
export const TtsCreateBody = z.object({
  voice_id: int().describe('Voice id from GET /audio/api/v1/api-keys/tts/voices'),
  emotion: int().pipe(z.number().min(0).max(8)).meta({ enum: EMOTION_NAMES.map((_, id) => id) }).describe('0 auto, 1 happy, 2 angry, 3 sad, 4 afraid, 5 disgusted, 6 melancholic, 7 surprised, 8 calm'),
  speed: num().pipe(z.number().min(0.25).max(4)).describe('Speed multiplier: 0.5, 1, 2 (0.25 to 4 accepted)'),
  language: z.enum(['all', ...TTS_LANGUAGES]).describe('Language key; must match the voice (all = the voice decides)'),
  text: z.string().describe('Text to synthesize; line breaks become pauses'),
  format: z.enum(['mp3', 'wav']).optional().describe('Soundry addition: output format, mp3 by default'),
});
export type TtsCreateBody = z.infer<typeof TtsCreateBody>;

/** Stored with a TTS task; read by the worker. */
export const TtsParams = versioned(
  z.object({
    v: z.literal(1),
    text: z.string(),
    voiceId: z.number().int(),
    language: z.string(),
    emotion: z.number().int(),
    speed: z.number(),
    format: z.enum(['mp3', 'wav']),
  }),
);
export type TtsParams = z.infer<typeof TtsParams>;

/** Stored on success. */
export const TtsResult = z.object({
  outputKey: z.string(),
  format: z.enum(['mp3', 'wav']),
  durationSeconds: z.number(),
  voiceKey: z.string(),
  emotion: z.string(),
  characters: z.number(),
  /** Why `engine` is the built-in one although a neural voice was asked for (shown as `engine_note`). */
  engineNote: z.string().optional(),
});
export type TtsResult = z.infer<typeof TtsResult>;

/** OpenAI's speech formats (docs/api.md "OpenAI-compatible routes"); pcm is raw 24 kHz s16le mono. */
export const OPENAI_SPEECH_FORMATS = ['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm'] as const;

/** POST /v1/audio/speech, OpenAI's body (fields Soundry does not use are accepted and ignored by zod's strip). */
export const OpenAiSpeechBody = z.object({
  model: z.string().min(1).describe('tts-1, tts-1-hd, gpt-4o-mini-tts (all rendered by the same engines)'),
  input: z.string().min(1).describe('Text to speak'),
  voice: z.union([z.string().min(1), z.object({ id: z.string().min(1) })]).describe('OpenAI voice name, or a Soundry voice id or name'),
  response_format: z.enum(OPENAI_SPEECH_FORMATS).default('mp3'),
  speed: z.number().min(0.25).max(4).default(1),
  instructions: z.string().optional().describe('An emotion named here (happy, sad, calm...) is used where the voice has it'),
  stream_format: z.enum(['audio']).optional().describe('Only audio (raw bytes); sse is not offered'),
});
export type OpenAiSpeechBody = z.infer<typeof OpenAiSpeechBody>;

/** What tts/task/get answers in data (the SDK and the OpenAPI document read it; the API side builds it in api.ts). */
export const TtsQueryData = z.looseObject({
  status: z.enum(['waiting', 'success', 'failed']),
  output: z.string().describe('Result file URL on success, empty otherwise'),
  progress: z.number().optional().describe('0 to 1 while waiting'),
  duration: z.number().optional(),
  engine: z.string().nullable().optional(),
  engine_note: z.string().optional().describe('Soundry addition: why a built-in voice spoke although a neural voice was asked for'),
  credits: z.number().optional(),
  error: z.string().nullable().optional().describe('Why the task failed'),
});
export type TtsQueryData = z.infer<typeof TtsQueryData>;

/** Shown in the OpenAPI document; test/http/openapi.test.ts checks it passes TtsCreateBody. */
export const TTS_EXAMPLE: z.input<typeof TtsCreateBody> = { voice_id: 1001, emotion: 1, speed: 1, language: 'en', text: 'Hello from my own server!' };
