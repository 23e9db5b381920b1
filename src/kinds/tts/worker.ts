import { join } from 'node:path';
import { stat } from 'node:fs/promises';
import { ttsCredits, countCharacters } from '../../domain/pricing.js';
import { AUDIO_CONTENT_TYPES } from '../../domain/vocabulary.js';
import type { BlobStore } from '../../ports/blob-store.js';
import type { JobContext, JobOutcome, TaskHandler } from '../../jobs/handler.js';
import type { EngineThreads } from '../threads.js';
import { TtsParams, type TtsResult } from './contract.js';
import type { VoiceModels } from './voice-models.js';

/** Of a task's progress, the share a first-use model download takes (it dominates a short text's synthesis). */
const PULL_SHARE = 0.5;

/** TTS: synthesis and encoding (ffmpeg) in an engine thread, the file into the blob store. */
export class TtsHandler implements TaskHandler {
  readonly kind = 'tts' as const;

  constructor(private readonly deps: { threads: EngineThreads; blobs: BlobStore; ffmpeg: string; models: VoiceModels }) {}

  async run(ctx: JobContext): Promise<JobOutcome> {
    const params = TtsParams.parse(ctx.task.params);
    // A neural voice listed before its model is installed: downloaded first (MODELS_AUTO_PULL), on this event loop.
    let pulling = false;
    const unavailable = await this.deps.models.ensure(params.voiceId, {
      signal: ctx.signal, onProgress: (f) => ((pulling = true), ctx.onProgress(PULL_SHARE * f)),
    });
    const from = pulling ? PULL_SHARE : 0;
    const file = join(ctx.tmpDir, `output.${params.format}`);
    // Encoded by the engine thread too (TtsThreadInput.encodeTo): not from this event loop.
    const out = await this.deps.threads.run(
      'tts',
      {
        text: params.text, language: params.language, voiceId: params.voiceId, emotion: params.emotion, speed: params.speed, ...(unavailable ? { unavailable } : {}),
        encodeTo: { path: file, format: params.format, ffmpeg: this.deps.ffmpeg },
      },
      // The task's own folder as the thread's scratch: no folder made and removed per run on this event loop.
      { signal: ctx.signal, onProgress: (f) => ctx.onProgress(from + (0.9 - from) * f), tmpDir: ctx.tmpDir },
    );
    const outputKey = `tasks/${ctx.task.id}/output.${params.format}`;
    await stat(file);
    await this.deps.blobs.putFile(outputKey, file, AUDIO_CONTENT_TYPES[params.format]);
    const durationSeconds = out.samples.length / out.sampleRate;
    const result: TtsResult = {
      outputKey,
      format: params.format,
      durationSeconds: Math.round(durationSeconds * 1000) / 1000,
      voiceKey: out.voiceKey,
      emotion: out.emotion,
      characters: countCharacters(params.text),
      ...(out.engineNote ? { engineNote: out.engineNote } : {}),
    };
    return { result, engine: out.engine, price: ttsCredits(params.text), audioSeconds: durationSeconds };
  }
}
