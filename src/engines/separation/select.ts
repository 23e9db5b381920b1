import type { EngineContext } from '../../ports/engines.js';
import { BuiltinSeparationEngine, type BuiltinOptions } from './builtin.js';
import { isModelType, type AudioSource, type SeparationEngine, type SeparationRun, type StemSink } from './engine.js';
import { ModelLoadError, NeuralSeparationEngine, type NeuralEngineOptions } from './neural.js';
import { AutoPuller } from '../../models/auto-pull.js';
import type { ModelEntry } from '../../models/catalog.js';
import { findPreset, NEURAL_PRESETS } from './onnx/presets.js';
import { servingModels, type RemedyCause, type SeparationRemedy } from './remedy.js';

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

/** Share of a task's progress the download takes when one happens. */
const PULL_SHARE = 0.3;

export class SelectingSeparationEngine implements SeparationEngine {
  readonly id = 'auto';
  private readonly builtin: BuiltinSeparationEngine;
  private readonly neural: NeuralSeparationEngine | null;
  /** Per engine instance: remembers failed downloads, so a broken mirror does not stall every task. */
  private readonly puller = new AutoPuller();

  constructor(private readonly opts: SelectingOptions) {
    this.builtin = new BuiltinSeparationEngine(opts.builtin);
    if (opts.choice === 'builtin') {
      this.neural = null;
    } else {
      const forced = opts.choice === 'auto' ? undefined : findPreset(opts.choice);
      if (opts.choice !== 'auto' && !forced) throw new Error(`SEPARATION_ENGINE: unknown model ${opts.choice}`);
      // A forced karaoke model still needs a vocal model in front of it.
      const presets = forced ? NEURAL_PRESETS.filter((p) => p === forced || (forced.family === 'mdx' && forced.karaoke && p.family === 'mdx' && !p.karaoke)) : NEURAL_PRESETS;
      // A model named by the site may be pulled even when it is never pulled on its own (the bag, the Mega RoFormer).
      this.neural = new NeuralSeparationEngine({ ...opts, presets, pullOptIn: forced !== undefined });
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
    let cause: RemedyCause | undefined = this.neural ? undefined : 'builtin-only';
    let runCtx = ctx;
    if (this.neural && this.opts.autoPull && !this.neural.supports(modelType)) {
      const wanted = this.neural.pullPlan(modelType);
      if (wanted.length > 0) {
        note = await this.pull(wanted, ctx);
        if (note) cause = 'download-failed';
        else runCtx = { ...ctx, onProgress: (f) => ctx.onProgress(PULL_SHARE + (1 - PULL_SHARE) * f) };
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
        cause = 'load-failed';
      }
    }
    const run = (await this.builtin.separate(input, modelType, runCtx, sink)) ?? { engine: this.builtin.id };
    // A stem found nowhere fails the task (worker.ts): it gets to say what would have served the model type.
    const remedy = run.missing?.length ? this.remedy(modelType, cause, note) : undefined;
    return { ...run, ...(note ? { note } : {}), ...(remedy ? { remedy } : {}) };
  }

  /**
   * What would serve `modelType` and why it did not here; `detail` is operator detail for the log. The models named
   * are those still to install where some of a route's models are there already (490's vocal model, say).
   */
  private remedy(modelType: number, cause: RemedyCause | undefined, detail: string | undefined): SeparationRemedy {
    const toInstall = cause === 'load-failed' ? [] : (this.neural?.pullPlan(modelType) ?? []).map((e) => e.name);
    const models = toInstall.length ? toInstall : servingModels(modelType, this.opts.catalog);
    return { cause: cause ?? (models.length ? 'not-installed' : 'none'), models, ...(detail ? { detail } : {}) };
  }

  /** Downloads `entries` (the shared auto-pull path) into the task's first PULL_SHARE; undefined when all verified. */
  private async pull(entries: ModelEntry[], ctx: EngineContext): Promise<string | undefined> {
    const why = await this.puller.pull(entries, {
      modelsDir: this.opts.modelsDir,
      signal: ctx.signal,
      onProgress: (f) => ctx.onProgress(PULL_SHARE * f),
      ...(this.opts.baseUrl ? { baseUrl: this.opts.baseUrl } : {}),
      ...(this.opts.fetchImpl ? { fetchImpl: this.opts.fetchImpl } : {}),
      ...(this.opts.stallMs !== undefined ? { stallMs: this.opts.stallMs } : {}),
    });
    return why && `${why}; separated with the built-in engine`;
  }
}

export function createSeparationEngine(opts: SelectingOptions): SelectingSeparationEngine {
  return new SelectingSeparationEngine(opts);
}
