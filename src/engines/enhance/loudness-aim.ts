import type { AudioData } from '../../media/audio.js';
import { LoudnessMeter, type LoudnessResult } from './loudness.js';
import { NormalizeStage, type NormalizeOptions } from './normalize.js';
import type { AnalysisPass } from './stage.js';

/**
 * Aiming `normalize` when the true-peak limiter engages. The limiter takes away loudness (the peaks it
 * lowers counted in the measurement: 0.5-1 LU on speech, more on spiky recordings), so the gain must be
 * raised by a compensation that is only known by trying. One pass runs the limited normalize at several
 * compensations side by side and meters each; the loudness they give rises smoothly with the
 * compensation, so interpolating between the two that bracket the target lands within ~0.1 LU, with no
 * second trial pass over the chain.
 */

/**
 * Compensations tried, dB. Above 9 dB the limiter would remove more than ~9 dB of peak level for the
 * whole file, audibly squashing it; such files stop short of the target (docs/api.md).
 */
export const AIM_COMPENSATIONS_DB = [0, 1, 2, 3.5, 5.5, 9] as const;

export interface LoudnessAim {
  /** Extra gain in dB to pass as NormalizeOptions.compensationDb. */
  compensationDb: number;
  /** Integrated loudness the aimed pass is expected to give, LUFS. */
  expectedLufs: number;
  /** True when even the largest compensation stays under the target (the ceiling does not allow it). */
  capped: boolean;
}

export class LimiterAimPass implements AnalysisPass<LoudnessAim> {
  private readonly trials: Array<{ comp: number; stage: NormalizeStage; meter: LoudnessMeter }>;
  private flushed = false;

  constructor(measured: LoudnessResult, sampleRate: number, channelCount: number, private readonly opts: NormalizeOptions = {}) {
    this.trials = AIM_COMPENSATIONS_DB.map((comp) => ({
      comp,
      stage: new NormalizeStage(measured, sampleRate, channelCount, { ...opts, compensationDb: comp }),
      // Loudness only: the limiter already guarantees the ceiling.
      meter: new LoudnessMeter(sampleRate, channelCount, false),
    }));
  }

  push(block: AudioData): void {
    for (const t of this.trials) {
      const out = t.stage.pushSync(block);
      if (out) t.meter.push(out);
    }
  }

  result(): LoudnessAim {
    if (!this.flushed) {
      for (const t of this.trials) {
        const tail = t.stage.flushSync();
        if (tail) t.meter.push(tail);
      }
      this.flushed = true;
    }
    const target = this.opts.targetLufs ?? -16;
    const got = this.trials.map((t) => t.meter.result().integratedLufs);
    if (!got.every(Number.isFinite)) return { compensationDb: 0, expectedLufs: got[0]!, capped: false };
    if (got[0]! >= target) return { compensationDb: 0, expectedLufs: got[0]!, capped: false };
    for (let i = 1; i < got.length; i++) {
      if (got[i]! < target) continue;
      const a = this.trials[i - 1]!.comp, b = this.trials[i]!.comp;
      const f = (target - got[i - 1]!) / Math.max(1e-6, got[i]! - got[i - 1]!);
      return { compensationDb: a + f * (b - a), expectedLufs: target, capped: false };
    }
    const last = this.trials.length - 1;
    return { compensationDb: this.trials[last]!.comp, expectedLufs: got[last]!, capped: true };
  }
}

/** A normalize stage aimed with the pass's result (the chain's final stage). */
export function aimedNormalize(measured: LoudnessResult, aim: LoudnessAim | null, sampleRate: number, channelCount: number, opts: NormalizeOptions): NormalizeStage {
  return new NormalizeStage(measured, sampleRate, channelCount, { ...opts, compensationDb: aim?.compensationDb ?? 0 });
}
