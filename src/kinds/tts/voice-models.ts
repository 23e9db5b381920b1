/**
 * MODELS_AUTO_PULL for TTS voices, on the process side: a voice listed before its neural model is installed gets the
 * model downloaded (with the task's progress), verified and installed before its synthesis is handed to an engine
 * thread. Downloading is I/O, so it stays on the event loop: inside the single short-lane thread a 63 MB download
 * would hold up every other TTS task, voice sample and OpenAI speech request of the node.
 * Generic over neural TTS engines: the voice library says which catalog model a voice needs (EngineVoice.pullModel).
 */
import type { ModelEntry } from '../../models/catalog.js';
import { findModel } from '../../models/catalog.js';
import { AutoPuller } from '../../models/auto-pull.js';
import type { VoiceLibrary } from '../../ports/voices.js';

export interface VoiceModelOptions {
  voices: VoiceLibrary;
  catalog: readonly ModelEntry[];
  modelsDir: string;
  /** MODELS_AUTO_PULL. */
  autoPull: boolean;
  /** MODELS_BASE_URL. */
  baseUrl?: string | undefined;
  /** No bytes for this long gives a download up (AutoPuller's default when absent). */
  stallMs?: number;
}

/** One per long-lived owner (a handler, the OpenAI speech route): failures are remembered per model for a while. */
export class VoiceModels {
  private readonly puller = new AutoPuller();

  constructor(private readonly opts: VoiceModelOptions) {}

  /**
   * Makes the voice's model installed when it needs one. Undefined when the voice can speak as it is (now); else why
   * not, in one sentence, for the thread to speak with the built-in voice and say so.
   */
  async ensure(voiceId: number, run: { signal: AbortSignal; onProgress(fraction: number): void }): Promise<string | undefined> {
    const model = await this.opts.voices.modelToDownload(voiceId);
    if (!model) return undefined;
    if (!this.opts.autoPull) return `its model ${model} is not installed (MODELS_AUTO_PULL is off; run: soundry models pull ${model})`;
    const entry = findModel(model, this.opts.catalog);
    if (!entry) return `its model ${model} is not in the catalog`;
    return this.puller.pull([entry], {
      modelsDir: this.opts.modelsDir, signal: run.signal, onProgress: run.onProgress,
      ...(this.opts.baseUrl ? { baseUrl: this.opts.baseUrl } : {}), ...(this.opts.stallMs ? { stallMs: this.opts.stallMs } : {}),
    });
  }
}
