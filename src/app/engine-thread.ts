/**
 * Entry of an engine thread (Piscina) and its composition root. This module is the root of one
 * thread, so the table it builds (and the engines each entry keeps warm between tasks) are that
 * thread's own, not process-wide singletons.
 */
import { setPriority } from 'node:os';
import type { MessagePort } from 'node:worker_threads';
import { workerData } from 'piscina';
import { TaskFailure } from '../domain/errors.js';
import type { EngineContext } from '../ports/engines.js';
import { THREAD_RUN_ABORT, THREAD_RUN_STARTED, type ThreadEnv, type ThreadMessage, type ThreadTable } from '../kinds/threads.js';
import { ttsThread } from '../kinds/tts/thread.js';
import { separationThread } from '../kinds/separation/thread.js';
import { enhanceThread } from '../kinds/enhance/thread.js';
import { asrThread } from '../kinds/podcast-script/asr-thread.js';
import { llmThread } from '../kinds/podcast-script/llm-thread.js';

/** Errors lose their class crossing threads: a final failure travels as data and is rebuilt. */
export type ThreadReply<T> = { ok: true; value: T } | { ok: false; failure: string };
/** The pool's health probe: answered 'pong' once this module, and every engine module it imports, has loaded. */
export type ThreadPing = { name: 'ping' };

const env: ThreadEnv = workerData;
lowerPriority(env.nice ?? 0);

/**
 * Engines are minutes of CPU, requests are microseconds: on a node that serves the API too (ROLE=all), or
 * answers probes and heartbeats its leases (a worker), the event loop's thread must get a core first when
 * both want one. On Linux setpriority(PRIO_PROCESS, 0) changes only the calling thread (threads are tasks
 * there), so this thread alone runs at `nice`, and ffmpeg or models it starts inherit it. Elsewhere it would
 * change the whole process: not done there.
 */
function lowerPriority(nice: number): void {
  if (nice <= 0 || process.platform !== 'linux') return;
  try {
    setPriority(nice);
  } catch {
    // Not allowed (a sandbox without setpriority): the thread keeps the process's priority.
  }
}
const table: ThreadTable = {
  tts: ttsThread(env),
  separation: separationThread(env),
  enhance: enhanceThread(env),
  asr: asrThread(env),
  llm: llmThread(),
};

function dispatch(message: ThreadMessage, ctx: EngineContext): Promise<unknown> {
  switch (message.name) {
    case 'tts':
      return table.tts(message.input, ctx);
    case 'separation':
      return table.separation(message.input, ctx);
    case 'enhance':
      return table.enhance(message.input, ctx);
    case 'asr':
      return table.asr(message.input, ctx);
    case 'llm':
      return table.llm(message.input, ctx);
  }
}

export default async function run(task: (ThreadMessage & { progressPort: MessagePort; tmpDir: string }) | ThreadPing): Promise<ThreadReply<unknown>> {
  if (task.name === 'ping') return { ok: true, value: 'pong' };
  // Long work is aborted by terminating the thread (Piscina); short work is asked to stop through the port, and its
  // engines see that in their signal (thread-pool.ts). The scratch folder is the pool's, made for this run and
  // removed by it whatever happens to the thread.
  const abort = new AbortController();
  task.progressPort.on('message', (message: unknown) => {
    if (message === THREAD_RUN_ABORT) abort.abort(new Error('the run was cancelled'));
  });
  task.progressPort.postMessage(THREAD_RUN_STARTED);
  const ctx: EngineContext = { tmpDir: task.tmpDir, signal: abort.signal, onProgress: (f) => task.progressPort.postMessage(f) };
  try {
    return { ok: true, value: await dispatch(task, ctx) };
  } catch (err) {
    if (err instanceof TaskFailure && !err.retryable) return { ok: false, failure: err.message };
    throw err;
  } finally {
    task.progressPort.close();
  }
}
