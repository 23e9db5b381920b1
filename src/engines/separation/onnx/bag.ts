/**
 * demucs' BagOfModels at inference: every network separates the same input and source s is the weighted mean of the
 * networks' estimates, out[s] = sum_m w[m][s] * y_m[s] / sum_m w[m][s] (htdemucs_ft: identity weights, so each source
 * comes from the one network fine-tuned for it). The networks run one after the other on each block, so memory is
 * one network's chunk at a time; their outputs are queued until every network has reached the same position, since
 * stages may emit blocks of different sizes.
 */
import type { Stereo, StereoStage } from './overlap-add.js';
import { PlanarFifo } from './stream.js';

export class BagStage implements StereoStage {
  readonly stems: readonly string[];
  private readonly fifos: PlanarFifo[];

  constructor(private readonly stages: readonly StereoStage[], private readonly weights: ReadonlyArray<readonly number[]>, sources: readonly string[]) {
    if (stages.length !== weights.length) throw new Error(`bag: ${stages.length} networks but ${weights.length} weight rows`);
    this.stems = sources;
    this.fifos = stages.map(() => new PlanarFifo());
    if (weights.some((w) => !w.some((v) => v > 0))) throw new Error('bag: a network weighs no source');
    sources.forEach((s, k) => {
      if (weights.every((w) => !(w[k]! > 0))) throw new Error(`bag: no network weighs source ${s}`);
    });
  }

  async push(x: Stereo): Promise<Array<Record<string, Stereo>>> {
    for (const [m, stage] of this.stages.entries()) this.queue(m, await stage.push(x));
    return this.combine();
  }

  async end(): Promise<Array<Record<string, Stereo>>> {
    for (const [m, stage] of this.stages.entries()) this.queue(m, await stage.end());
    return this.combine();
  }

  private queue(m: number, blocks: Array<Record<string, Stereo>>): void {
    // A network whose weight for a source is 0 need not keep that source's samples.
    const kept = this.stems.filter((_, k) => this.weights[m]![k]! > 0);
    for (const b of blocks) this.fifos[m]!.push(Object.fromEntries(kept.map((s) => [s, [...b[s]!]])));
  }

  private combine(): Array<Record<string, Stereo>> {
    const n = Math.min(...this.fifos.map((f) => f.length));
    if (n === 0) return [];
    const parts = this.fifos.map((f) => f.take(n));
    const out: Record<string, Stereo> = {};
    this.stems.forEach((s, k) => {
      const total = this.weights.reduce((a, w) => a + (w[k]! > 0 ? w[k]! : 0), 0);
      const y: Stereo = [new Float32Array(n), new Float32Array(n)];
      parts.forEach((p, m) => {
        const w = this.weights[m]![k]!;
        if (!(w > 0)) return;
        for (let c = 0; c < 2; c++) {
          const src = p[s]![c]!;
          const dst = y[c]!;
          for (let i = 0; i < n; i++) dst[i]! += (w / total) * src[i]!;
        }
      });
      out[s] = y;
    });
    return [out];
  }
}
