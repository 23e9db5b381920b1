import type { EngineContext } from '../../ports/engines.js';
import { BuiltinSeparationEngine, type BuiltinOptions } from './builtin.js';
import { isModelType, type AudioSource, type SeparationEngine, type SeparationRun, type StemSink } from './engine.js';
import { NeuralSeparationEngine, type NeuralEngineOptions } from './neural.js';
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
}

export class SelectingSeparationEngine implements SeparationEngine {
  readonly id = 'auto';
  private readonly builtin: BuiltinSeparationEngine;
  private readonly neural: NeuralSeparationEngine | null;

  constructor(opts: SelectingOptions) {
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
    const engine = this.pick(modelType);
    const run = await engine.separate(input, modelType, ctx, sink);
    return run ?? { engine: engine.id };
  }
}

export function createSeparationEngine(opts: SelectingOptions): SelectingSeparationEngine {
  return new SelectingSeparationEngine(opts);
}
