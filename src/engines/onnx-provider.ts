import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { TaskFailure } from '../domain/errors.js';

export type ExecutionProviderSetting = 'auto' | 'cpu' | 'cuda';

export interface ProviderChoice {
  /** onnxruntime execution providers in order of preference. */
  providers: string[];
  /** One line for the start-up log: what was chosen and why. */
  reason: string;
}

/**
 * ONNX_EXECUTION_PROVIDER. onnxruntime-node always lists `cuda` as a backend, but it works only when the CUDA
 * provider library was installed beside the binding (npm installs it on a host with CUDA 12 and cuDNN 9) and the
 * driver loads; `auto` therefore asks for CUDA only when that library is there, and keeps CPU behind it so that
 * onnxruntime falls back per node when a kernel is missing. `cuda` insists (a load error then names the cause).
 */
export function chooseExecutionProviders(setting: ExecutionProviderSetting, bindingDir = defaultBindingDir()): ProviderChoice {
  if (setting === 'cpu') return { providers: ['cpu'], reason: 'ONNX_EXECUTION_PROVIDER=cpu' };
  if (setting === 'cuda') return { providers: ['cuda'], reason: 'ONNX_EXECUTION_PROVIDER=cuda (no CPU fall-back)' };
  const listed = safeBackends().some((b) => b.name === 'cuda');
  const lib = bindingDir ? join(bindingDir, 'libonnxruntime_providers_cuda.so') : null;
  if (listed && lib && existsSync(lib)) return { providers: ['cuda', 'cpu'], reason: `auto: CUDA provider found at ${lib}` };
  return { providers: ['cpu'], reason: `auto: no CUDA provider library${lib ? ` at ${lib}` : ''}; running on CPU` };
}

function safeBackends(): Array<{ name: string }> {
  try {
    return ort.listSupportedBackends();
  } catch {
    return [];
  }
}

/** The folder holding onnxruntime-node's native binding for this platform. */
function defaultBindingDir(): string | null {
  try {
    const pkg = createRequire(import.meta.url).resolve('onnxruntime-node/package.json');
    // onnxruntime-node ships one N-API build (napi-v6) per platform.
    const dir = join(dirname(pkg), 'bin', 'napi-v6', process.platform, process.arch);
    return existsSync(dir) ? dir : null;
  } catch {
    return null;
  }
}

/**
 * Opens a verified TTS model file as a sequential single-request session. A verified file that still will not load
 * cannot load on a retry either: the failure is permanent (TaskFailure) and names `what` and the file.
 */
export function openVerifiedSession(path: string, providers: readonly string[], intraOpThreads: number, what: string): Promise<ort.InferenceSession> {
  return ort.InferenceSession.create(path, {
    executionProviders: [...providers],
    intraOpNumThreads: intraOpThreads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  }).catch((err: unknown) => {
    throw new TaskFailure(`${what}: model file ${path} could not be loaded (${providers.join(', ')}): ${(err as Error).message.split('\n')[0]}`);
  });
}
