import type { EngineContext } from '../../ports/engines.js';
import { BuiltinSeparationEngine, type BuiltinOptions } from './builtin.js';
import { isModelType, type AudioSource, type SeparationEngine, type SeparationRun, type StemSink } from './engine.js';
import { ModelLoadError, NeuralSeparationEngine, type NeuralEngineOptions } from './neural.js';
import { pullModel } from '../../models/download.js';
import { DownloadBusyError } from '../../models/download-lock.js';
import type { ModelEntry } from '../../models/catalog.js';
import { findPreset, NEURAL_PRESETS } from './onnx/presets.js';

/**
 * SEPARATION_ENGINE: `auto` (default) takes, per model type, the best neural model installed in MODELS_DIR and the
 * built-in DSP engine otherwise; `builtin` never loads a model; a model name (e.g. `Kim_Vocal_2`) uses only that
 * model where it applies (plus, for 490, the vocal model the karaoke chain needs) and the built-in engine elsewhere.
 */
export type SeparationEngineChoice = 'auto' | 'builtin' | (string & {});

export function isSeparationEngineChoice(value: string): boolean {
  return value === 'auto' || value === 'builtin' || findPreset(value) !== undefined;
}

export interface SelectingOptions extends Omit<NeuralEngineOptions, 'presets'> {
  choice: SeparationEngineChoice;
  builtin?: BuiltinOptions;
  /** MODELS_AUTO_PULL: download the model a task needs when it is not installed. */
  autoPull?: boolean;
  /** MODELS_BASE_URL: the mirror downloads come from. */
  baseUrl?: string;
  /** Tests only: a fetch that serves the catalog without a network. */
  fetchImpl?: typeof fetch;
  /** A download that receives nothing for this long is given up (default 30 s): a dropped network must not hang tasks. */
  stallMs?: number;
}

/** After a failed download, tasks do not try the same model again for this long (each would wait on it). */
const RETRY_PULL_AFTER_MS = 10 * 60_000;
/** Share of a task's progress the download takes when one happens. */
const PULL_SHARE = 0.3;

export class SelectingSeparationEngine implements SeparationEngine {
  readonly id = 'auto';
  private readonly builtin: BuiltinSeparationEngine;
  private readonly neural: NeuralSeparationEngine | null;
  /** Per engine instance: the last failed download per model, so a broken mirror does not stall every task. */
  private readonly failedPulls = new Map<string, { at: number; reason: string }>();

  constructor(private readonly opts: SelectingOptions) {
    this.builtin = new BuiltinSeparationEngine(opts.builtin);
    if (opts.choice === 'builtin') {
      this.neural = null;
    } else {
      const forced = opts.choice === 'auto' ? undefined : findPreset(opts.choice);
      if (opts.choice !== 'auto' && !forced) throw new Error(`SEPARATION_ENGINE: unknown model ${opts.choice}`);
      // A forced karaoke model still needs a vocal model in front of it.
      const presets = forced ? NEURAL_PRESETS.filter((p) => p === forced || (forced.family === 'mdx' && forced.karaoke && p.family === 'mdx' && !p.karaoke)) : NEURAL_PRESETS;
      this.neural = new NeuralSeparationEngine({ ...opts, presets });
    }
  }

  /** Which engine would run a model type now (installed models can change between tasks). */
  pick(modelType: number): SeparationEngine {
    return this.neural?.supports(modelType) ? this.neural : this.builtin;
  }

  supports(modelType: number): boolean {
    return isModelType(modelType);
  }

  async separate(input: AudioSource, modelType: number, ctx: EngineContext, sink: StemSink): Promise<SeparationRun> {
    let note: string | undefined;
    let runCtx = ctx;
    if (this.neural && this.opts.autoPull && !this.neural.supports(modelType)) {
      const wanted = this.neural.pullPlan(modelType);
      if (wanted.length > 0) {
        note = await this.pull(wanted, ctx);
        if (!note) runCtx = { ...ctx, onProgress: (f) => ctx.onProgress(PULL_SHARE + (1 - PULL_SHARE) * f) };
      }
    }
    const engine = this.pick(modelType);
    if (engine === this.neural) {
      try {
        return (await engine.separate(input, modelType, runCtx, sink)) ?? { engine: engine.id };
      } catch (err) {
        // Thrown before any stem was written (sessions load first): the built-in engine can still serve the task.
        if (!(err instanceof ModelLoadError)) throw err;
        note = `${err.message}; separated with the built-in engine instead`;
      }
    }
    const run = (await this.builtin.separate(input, modelType, runCtx, sink)) ?? { engine: this.builtin.id };
    return note ? { ...run, note } : run;
  }

  /** Downloads `entries` with progress into the task; undefined when all verified, else why not (a readable note). */
  private async pull(entries: ModelEntry[], ctx: EngineContext): Promise<string | undefined> {
    const now = Date.now();
    for (const entry of entries) {
      const failed = this.failedPulls.get(entry.name);
      if (failed && now - failed.at < RETRY_PULL_AFTER_MS) {
        return `model ${entry.name} is not installed and its download failed recently (${failed.reason}); separated with the built-in engine`;
      }
    }
    const total = entries.reduce((n, e) => n + e.files.reduce((m, f) => m + f.sizeBytes, 0), 0);
    const done = new Map<string, number>();
    const stallMs = this.opts.stallMs ?? 30_000;
    for (const entry of entries) {
      const stalled = new AbortController();
      let timer = setTimeout(() => stalled.abort(new Error(`no data for ${stallMs / 1000} s`)), stallMs);
      const alive = () => {
        clearTimeout(timer);
        timer = setTimeout(() => stalled.abort(new Error(`no data for ${stallMs / 1000} s`)), stallMs);
      };
      try {
        await pullModel(entry, {
          modelsDir: this.opts.modelsDir,
          signal: AbortSignal.any([ctx.signal, stalled.signal]),
          ...(this.opts.baseUrl ? { baseUrl: this.opts.baseUrl } : {}),
          ...(this.opts.fetchImpl ? { fetchImpl: this.opts.fetchImpl } : {}),
          onProgress: (p) => {
            alive();
            done.set(`${p.model}/${p.file}`, p.receivedBytes);
            const got = [...done.values()].reduce((a, b) => a + b, 0);
            ctx.onProgress(PULL_SHARE * Math.min(1, total > 0 ? got / total : 1));
          },
        });
      } catch (err) {
        ctx.signal.throwIfAborted();
        const reason = stalled.signal.aborted ? `download stalled: ${(stalled.signal.reason as Error).message}` : (err as Error).message;
        // Another task downloading the same file is no sign of a broken mirror: the next task simply finds it installed.
        if (!(err instanceof DownloadBusyError)) this.failedPulls.set(entry.name, { at: Date.now(), reason });
        return `model ${entry.name} could not be installed: ${reason}; separated with the built-in engine`;
      } finally {
        clearTimeout(timer);
      }
      this.failedPulls.delete(entry.name);
    }
    return undefined;
  }
}

export function createSeparationEngine(opts: SelectingOptions): SelectingSeparationEngine {
  return new SelectingSeparationEngine(opts);
}
