/** The public surface of the Soundry client SDK. */
export { Soundry, TtsVoice, type FileInput, type RunOptions, type TtsCreateInput, type SeparationCreateInput, type EnhanceCreateInput, type PodcastScriptCreateInput, type PodcastAudioCreateInput } from './client.js';
export { TaskClient, type WaitOptions, type CreateOptions } from './tasks.js';
export { SoundryError, DEFAULT_TIMEOUT_SECONDS, type SoundryErrorKind, type CreatedTask, type ProgressEvent, type OnProgress, type TransportOptions, type UploadOptions } from './transport.js';
export { ENHANCE_FLAGS, MODEL_TYPES, TTS_LANGUAGES, PODCAST_LANGUAGES, type EnhanceFlag, type ModelType } from '../domain/vocabulary.js';
