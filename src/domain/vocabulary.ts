/**
 * The words every task kind shares, written once: the spec's language keys, emotions, enhancement
 * flags, separation model types and their stems, and the content types of the files Soundry writes.
 * The HTTP schemas, the kinds and the engines all import these; none keeps its own copy.
 */

/** The spec's TTS language keys. */
export const TTS_LANGUAGES = ['zh', 'en', 'ar', 'ru', 'es', 'fr', 'pt', 'de', 'ko', 'ja', 'zh_yue'] as const;
export type TtsLanguage = (typeof TTS_LANGUAGES)[number];

/** The spec's podcast language keys (the same eleven, in the podcast table's order). */
export const PODCAST_LANGUAGES = ['zh', 'zh_yue', 'en', 'ar', 'ru', 'es', 'fr', 'pt', 'de', 'ja', 'ko'] as const;
export type PodcastLanguage = (typeof PODCAST_LANGUAGES)[number];

export function isPodcastLanguage(language: string): language is PodcastLanguage {
  return (PODCAST_LANGUAGES as readonly string[]).includes(language);
}

/** Emotion ids of the spec: the index is the id (0 auto ... 8 calm). */
export const EMOTION_NAMES = ['auto', 'happy', 'angry', 'sad', 'afraid', 'disgusted', 'melancholic', 'surprised', 'calm'] as const;
export type EmotionName = (typeof EMOTION_NAMES)[number];

/** The fourteen enhancement flags of the spec. */
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
export type EnhanceFlag = (typeof ENHANCE_FLAGS)[number];

/** The spec's separation model types and the stems each one names. */
export const STEMS_BY_MODEL_TYPE = Object.freeze({
  350: Object.freeze(['vocals']),
  490: Object.freeze(['lead_vocals', 'backing_vocals', 'other']),
  340: Object.freeze(['drums']),
  360: Object.freeze(['bass']),
  380: Object.freeze(['piano']),
  390: Object.freeze(['guitar']),
  491: Object.freeze(['strings']),
  492: Object.freeze(['wind']),
  493: Object.freeze(['synthesizer']),
  501: Object.freeze(['bass', 'drums', 'vocals', 'other']),
  320: Object.freeze(['bass', 'drums', 'vocals', 'piano', 'guitar', 'other']),
} as const satisfies Record<number, readonly string[]>);
export const MODEL_TYPES = [350, 490, 340, 360, 380, 390, 491, 492, 493, 501, 320] as const;
export type ModelType = (typeof MODEL_TYPES)[number];

export function isModelType(value: number): value is ModelType {
  return (MODEL_TYPES as readonly number[]).includes(value);
}

/** Audio files Soundry writes, and their content types. */
export const AUDIO_CONTENT_TYPES = { mp3: 'audio/mpeg', wav: 'audio/wav', flac: 'audio/flac' } as const;
export type AudioFormat = keyof typeof AUDIO_CONTENT_TYPES;
export const ZIP_CONTENT_TYPE = 'application/zip';
