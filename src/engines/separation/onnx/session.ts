import { availableParallelism } from 'node:os';
import * as ort from 'onnxruntime-node';

/**
 * A graph Soundry built in memory from a checkpoint: its initializers are external data whose locations are
 * relative to `externalDataDir` (the checkpoint's folder), so nothing is written into the models folder, which may
 * be read-only and is listed and verified file by file.
 */
export interface GraphBytes {
  bytes: Uint8Array;
  externalDataDir: string;
}

/**
 * One onnxruntime session per model per engine instance, from an ONNX file or from graph bytes. Separation chunks
 * are large (seconds of audio), so the graph is worth all cores, unlike the per-frame denoisers; arena and
 * memory-pattern caching are off because they keep the peak of the largest chunk allocated for the life of the
 * session. Weight prepacking (session.disable_prepacking) stays on: off, the full-size Mel-Band RoFormer's one-chunk
 * peak (VmHWM) fell from 1.7-2.5 GB to 1.4-1.7 GB but the chunk ran 30-70% slower (32-38 s against 39-51 s, 2 threads,
 * three runs each at load average 13-19 on 2 cores), and HTDemucs' one-segment peak did not move (3.0 GB either way).
 */
export async function openSeparationSession(source: string | GraphBytes, threads = availableParallelism(), providers: readonly string[] = ['cpu']): Promise<ort.InferenceSession> {
  const options: ort.InferenceSession.SessionOptions = {
    executionProviders: [...providers],
    intraOpNumThreads: Math.max(1, threads),
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
    enableCpuMemArena: false,
    enableMemPattern: false,
  };
  if (typeof source === 'string') return ort.InferenceSession.create(source, options);
  // A model read from bytes has no folder of its own; this session option names the one its external-data
  // locations are resolved against, as they would be against the folder of a graph file written there.
  const extra = { session: { model_external_initializers_file_folder_path: source.externalDataDir } };
  return ort.InferenceSession.create(source.bytes, { ...options, extra });
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
