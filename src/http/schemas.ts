import { z } from 'zod';

/**
 * Request bodies of the spec's operations. Numbers sent as numeric strings are accepted (some
 * clients stringify everything); anything else of the wrong type is refused with 100002.
 */
const num = () =>
  z.union([z.number(), z.string().trim().regex(/^-?\d+(\.\d+)?$/).transform(Number)], {
    error: 'Invalid input: expected a number (or a numeric string such as "1.5")',
  });
const int = () => num().pipe(z.number().int());

export const TTS_LANGUAGES = ['zh', 'en', 'ar', 'ru', 'es', 'fr', 'pt', 'de', 'ko', 'ja', 'zh_yue'] as const;
export const PODCAST_LANGUAGES = ['zh', 'zh_yue', 'en', 'ar', 'ru', 'es', 'fr', 'pt', 'de', 'ja', 'ko'] as const;
export const MODEL_TYPES = [350, 490, 340, 360, 380, 390, 491, 492, 493, 501, 320] as const;
export const ENHANCE_FLAGS = [
  'remove_background_audio',
  'remove_echo',
  'autoid',
  'remove_noise',
  'long_silences',
  'mouth_sounds',
  'stutters',
  'fillers',
  'hesitations',
  'keep_music',
  'autoeq',
  'normalize',
  'studio_sound',
  'remove_reverb',
] as const;

export const TtsCreateBody = z.object({
  voice_id: int().describe('Voice id from GET /audio/api/v1/api-keys/tts/voices'),
  emotion: int().pipe(z.number().min(0).max(8)).describe('0 auto, 1 happy, 2 angry, 3 sad, 4 afraid, 5 disgusted, 6 melancholic, 7 surprised, 8 calm'),
  speed: num().pipe(z.number().min(0.25).max(4)).describe('Speed multiplier: 0.5, 1, 2 (0.25 to 4 accepted)'),
  language: z.enum(['all', ...TTS_LANGUAGES]).describe('Language key; must match the voice (all = the voice decides)'),
  text: z.string().describe('Text to synthesize; line breaks become pauses'),
  format: z.enum(['mp3', 'wav']).optional().describe('Soundry addition: output format, mp3 by default'),
});
export type TtsCreateBody = z.infer<typeof TtsCreateBody>;

export const SeparationCreateBody = z.object({
  model_type: int().refine((v) => (MODEL_TYPES as readonly number[]).includes(v), {
    message: `must be one of ${MODEL_TYPES.join(', ')}`,
  }),
  inputurl: z.string().min(1),
  separation_type: z
    .enum(['stems', 'accompaniment', 'vocals_accompaniment'])
    .optional()
    .describe('Soundry: stems (default), accompaniment (only the mix minus the vocals/target stems), vocals_accompaniment (both)'),
  output_format: z.enum(['mp3', 'wav', 'flac']).optional(),
});

export const EnhanceCreateBody = z.object({
  inputurl: z.string().min(1),
  enhance_type: z.strictObject(Object.fromEntries(ENHANCE_FLAGS.map((f) => [f, z.boolean().optional()]))),
});

const ScriptLine = z.object({
  role: z.string(),
  name: z.string().optional(),
  avatar: z.string().nullable().optional(),
  text: z.string(),
  voice_id: z.union([z.string(), z.number()]).optional(),
});
const Highlight = z.object({
  highlight: z.string(),
  index: int(),
  script_start_index: int(),
  script_end_index: int(),
});

export const PodcastScriptCreateBody = z
  .object({
    source_type: int().pipe(z.number().min(1).max(4)),
    speakers: z.array(int()).optional(),
    style: int().pipe(z.number().min(1).max(9)).optional(),
    duration: int().pipe(z.number().min(1).max(7)).optional(),
    use_mode: z.string().optional(),
    commercial_use: num().optional(),
    language: z.enum(PODCAST_LANGUAGES).optional(),
    text: z.string().optional(),
    url: z.string().optional(),
  })
  .superRefine((b, ctx) => {
    if (b.source_type === 4 && !b.text?.trim()) ctx.addIssue({ code: 'custom', path: ['text'], message: 'required when source_type is 4' });
    if (b.source_type !== 4 && !b.url?.trim()) ctx.addIssue({ code: 'custom', path: ['url'], message: 'required when source_type is 1, 2 or 3' });
  });

export const PodcastAudioCreateBody = z.object({
  title: z.string().optional(),
  processed_content: z.string().optional(),
  podcast_script: z.array(ScriptLine).min(1),
  hightlights: z.array(Highlight).optional(),
  global_id: z.string().min(1),
});

export const JobIdBody = z.object({ job_id: z.string().min(1) });
export const GlobalIdBody = z.object({ global_id: z.string().min(1) });

export const VoiceListQuery = z.object({
  language: z.string().optional(),
  gender: int().optional(),
  page: int().pipe(z.number().min(1)).default(1),
  page_size: int().pipe(z.number().min(1).max(500)).default(100),
});

export const Envelope = z.object({ code: z.number(), data: z.record(z.string(), z.unknown()), message: z.string() });
