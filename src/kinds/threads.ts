/**
 * The engine-thread table: every piece of CPU work a kind runs off the event loop, by name, with its
 * input and output types. The process side calls `EngineThreads.run(name, input)`; the thread side
 * (src/app/engine-thread.ts) builds one `ThreadTable` per thread from the kinds' thread entries, so a
 * name without an entry, or an entry of the wrong shape, is a compile error.
 */
import type { EngineContext } from '../ports/engines.js';
import type { ModelEntry } from '../models/catalog.js';
import type { TtsThreadInput, TtsThreadOutput } from './tts/thread.js';
import type { SeparationThreadInput, SeparationThreadOutput } from './separation/thread.js';
import type { EnhanceThreadInput, EnhanceThreadOutput } from './enhance/thread.js';
import type { AsrThreadInput, AsrThreadOutput } from './podcast-script/asr-thread.js';
import type { LlmThreadInput, LlmThreadOutput } from './podcast-script/llm-thread.js';

export interface ThreadTasks {
  tts: { input: TtsThreadInput; output: TtsThreadOutput };
  separation: { input: SeparationThreadInput; output: SeparationThreadOutput };
  enhance: { input: EnhanceThreadInput; output: EnhanceThreadOutput };
  asr: { input: AsrThreadInput; output: AsrThreadOutput };
  llm: { input: LlmThreadInput; output: LlmThreadOutput };
}
export type ThreadName = keyof ThreadTasks;

/**
 * Signals on a run's progress port besides its progress fractions: the thread says when the run has started,
 * and the pool asks a started run to stop (its engines get an aborted signal and stop at their next check).
 */
export const THREAD_RUN_STARTED = 'started';
export const THREAD_RUN_ABORT = 'abort';

/** What crosses into a thread: a name and its input, paired (a discriminated union the thread switches on). */
export type ThreadMessage = { [N in ThreadName]: { name: N; input: ThreadTasks[N]['input'] } }[ThreadName];

export type ThreadTable = {
  [N in ThreadName]: (input: ThreadTasks[N]['input'], ctx: EngineContext) => Promise<ThreadTasks[N]['output']>;
};

/** What every engine thread is configured with (Piscina workerData). */
export interface ThreadEnv {
  modelsDir: string;
  separationEngine: string;
  /** The effective model catalog (built-in plus MODELS_CATALOG_FILE): what counts as installed is checked against it. */
  catalog?: readonly ModelEntry[];
  /** MODELS_AUTO_PULL and MODELS_BASE_URL. */
  autoPull?: boolean;
  modelsBaseUrl?: string;
  /** onnxruntime execution providers, resolved once at start-up from ONNX_EXECUTION_PROVIDER. */
  executionProviders?: readonly string[];
  /**
   * Where each thread run gets a scratch folder (the process's own temp folder, swept if the process
   * dies); unset: the system's temp folder.
   */
  tmpDir?: string;
  /** ENGINE_NICE: each engine thread lowers its own priority to this nice value when it starts (Linux). */
  nice?: number;
  /** ENHANCE_THREADS: chunk worker threads of one enhancement run (src/kinds/enhance/parallel.ts); unset: every core. */
  enhanceThreads?: number;
}

export interface ThreadRunOptions {
  signal: AbortSignal;
  onProgress(fraction: number): void;
  /**
   * The run's scratch folder: a task's own temporary folder, which outlives the run and which its caller
   * removes. Unset: the pool makes one for the run and removes it after (two file-system round trips on the
   * event loop per run, plus the recursive removal's).
   */
  tmpDir?: string;
}

/** Engine work off the event loop; the process's thread pool implements it. */
export interface EngineThreads {
  run<N extends ThreadName>(name: N, input: ThreadTasks[N]['input'], opts: ThreadRunOptions): Promise<ThreadTasks[N]['output']>;
}
