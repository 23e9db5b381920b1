import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { TaskFailure } from '../domain/errors.js';
import { buildOnnxModel } from './onnx-graph/model.js';

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

/**
 * Opens a one-node graph on the chosen providers, so that a CUDA provider that cannot start (library missing, no
 * driver, wrong CUDA or cuDNN) is found at start-up, not by the first task. `cuda` then stops start-up with the
 * reason: the peers' most common complaint is a GPU asked for and the CPU used in silence. `auto` falls back to CPU
 * and says why in its reason (logged as a warning).
 */
export async function probeExecutionProviders(setting: ExecutionProviderSetting, choice: ProviderChoice): Promise<ProviderChoice & { fellBack?: boolean }> {
  if (choice.providers[0] !== 'cuda') return choice;
  const model = buildOnnxModel({
    name: 'probe',
    inputs: [{ name: 'x', elemType: 'float', shape: [1] }],
    outputs: [{ name: 'y', elemType: 'float', shape: [1] }],
    nodes: [{ opType: 'Identity', inputs: ['x'], outputs: ['y'] }],
  });
  try {
    const session = await ort.InferenceSession.create(model, { executionProviders: ['cuda'] });
    await session.release();
    return choice;
  } catch (err) {
    const why = (err as Error).message.split('\n')[0];
    if (setting === 'cuda') {
      throw new Error(
        `ONNX_EXECUTION_PROVIDER=cuda, but onnxruntime could not start its CUDA provider (${why}). Install the CUDA build ` +
          '(ONNXRUNTIME_NODE_INSTALL_CUDA=v12 npm ci, with CUDA 12 and cuDNN 9 on the library path), or set ONNX_EXECUTION_PROVIDER=auto or cpu',
      );
    }
    return { providers: ['cpu'], reason: `auto: the CUDA provider library is installed but did not start (${why}); running on CPU`, fellBack: true };
  }
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
