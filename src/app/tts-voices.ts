/**
 * The TTS voice side of the composition root: the voice library the API lists from, the process's downloader of
 * voice models (MODELS_AUTO_PULL, on the event loop) and the voice-sample renderer. Kept out of container.ts, which
 * would otherwise pass 400 lines.
 */
import type { Config } from '../config/config.js';
import type { ModelEntry } from '../models/catalog.js';
import type { VoiceLibrary, VoiceRecord } from '../ports/voices.js';
import type { EngineThreads } from '../kinds/threads.js';
import type { VoiceSampleRenderer } from '../http/routes/voice-assets.js';
import { createVoiceLibrary } from '../engines/tts/setup.js';
import { VoiceModels } from '../kinds/tts/voice-models.js';
import { encodeAudio } from '../media/ffmpeg.js';

export function ttsVoices(config: Config, catalog: readonly ModelEntry[]): { voices: VoiceLibrary; voiceModels: VoiceModels } {
  // With MODELS_AUTO_PULL, neural voices not installed yet are listed too (downloaded: false; docs/api.md).
  const voices = createVoiceLibrary({ modelsDir: config.MODELS_DIR, catalog, autoPull: config.MODELS_AUTO_PULL });
  // One per process: a failed download is remembered per model, so its tasks fall back at once for a while.
  const voiceModels = new VoiceModels({ voices, catalog, modelsDir: config.MODELS_DIR, autoPull: config.MODELS_AUTO_PULL, baseUrl: config.MODELS_BASE_URL });
  return { voices, voiceModels };
}

/** Voice samples, spoken on this node's engine threads (the short lane); never downloads a model. */
export function voiceSampleRenderer(threads: () => EngineThreads, ffmpeg: string): VoiceSampleRenderer {
  return {
    async render(voice: VoiceRecord, text: string, path: string) {
      const out = await threads().run(
        'tts',
        { text, language: voice.language, voiceId: voice.id, emotion: 0, speed: 1 },
        { signal: AbortSignal.timeout(120_000), onProgress: () => {} },
      );
      // A neural voice's own sample is cached for good, so a built-in stand-in must not take its place (its files went
      // missing since the list was read); a voice listed as not downloaded gets its stand-in's sample by design.
      if (out.engineNote && voice.downloaded !== false) throw new Error(`voice ${voice.id} sample not rendered: ${out.engineNote}`);
      await encodeAudio({ sampleRate: out.sampleRate, channels: [out.samples] }, path, { ffmpeg, format: 'mp3' });
    },
  };
}
