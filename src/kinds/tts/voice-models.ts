/**
 * MODELS_AUTO_PULL for TTS voices, on the process side: a voice listed before its neural model is installed gets the
 * model downloaded (with the task's progress), verified and installed before its synthesis is handed to an engine
 * thread. Downloading is I/O, so it stays on the event loop: inside the single short-lane thread a 63 MB download
 * would hold up every other TTS task, voice sample and OpenAI speech request of the node.
 * Generic over neural TTS engines: the voice library says which catalog models a voice needs (EngineVoice.pullModels):
 * Piper and Kokoro voices both go through here.
 */
import type { ModelEntry } from '../../models/catalog.js';
import { findModel } from '../../models/catalog.js';
import { AutoPuller } from '../../models/auto-pull.js';
import { modelsPhrase } from '../../engines/tts/synthesize.js';
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
   * Makes the voice's models installed when it needs some (a Piper voice its one model; a Kokoro voice the shared
   * model and/or its style table). Undefined when the voice can speak as it is (now); else why not, in one sentence,
   * for the thread to speak with the built-in voice and say so.
   */
  async ensure(voiceId: number, run: { signal: AbortSignal; onProgress(fraction: number): void }): Promise<string | undefined> {
    const models = await this.opts.voices.modelsToDownload(voiceId);
    if (models.length === 0) return undefined;
    if (!this.opts.autoPull) return `${modelsPhrase(models)} not installed (MODELS_AUTO_PULL is off; run: ${models.map((m) => `soundry models pull ${m}`).join('; ')})`;
    const entries: ModelEntry[] = [];
    for (const name of models) {
      const entry = findModel(name, this.opts.catalog);
      if (!entry) return `its model ${name} is not in the catalog`;
      entries.push(entry);
    }
    return this.puller.pull(entries, {
      modelsDir: this.opts.modelsDir, signal: run.signal, onProgress: run.onProgress,
      ...(this.opts.baseUrl ? { baseUrl: this.opts.baseUrl } : {}), ...(this.opts.stallMs ? { stallMs: this.opts.stallMs } : {}),
    });
  }
}
