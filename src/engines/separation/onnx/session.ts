import { availableParallelism } from 'node:os';
import * as ort from 'onnxruntime-node';

/**
 * One onnxruntime session per model per engine instance. Separation chunks are large (seconds of audio), so the
 * graph is worth all cores, unlike the per-frame denoisers; arena and memory-pattern caching are off because they
 * keep the peak of the largest chunk allocated for the life of the session.
 */
export async function openSeparationSession(path: string, threads = availableParallelism(), providers: readonly string[] = ['cpu']): Promise<ort.InferenceSession> {
  return ort.InferenceSession.create(path, {
    executionProviders: [...providers],
    intraOpNumThreads: Math.max(1, threads),
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
    enableCpuMemArena: false,
    enableMemPattern: false,
  });
}

/** Input name whose declared rank is `rank` (exports name inputs differently); `fallback` is an index into inputNames. */
export function inputByRank(session: ort.InferenceSession, rank: number, fallback: number): string {
  for (const m of session.inputMetadata ?? []) {
    if (m.isTensor && Array.isArray(m.shape) && m.shape.length === rank) return m.name;
  }
  const name = session.inputNames[fallback];
  if (!name) throw new Error(`model has no input of rank ${rank}`);
  return name;
}

/** Output tensor of rank `rank` from a run result (time- and frequency-branch outputs differ in rank). */
export function outputByRank(result: ort.InferenceSession.OnnxValueMapType, rank: number): ort.Tensor {
  for (const v of Object.values(result)) {
    const t = v as ort.Tensor;
    if (t.dims.length === rank) return t;
  }
  throw new Error(`model gave no output of rank ${rank}`);
}

export { ort };
