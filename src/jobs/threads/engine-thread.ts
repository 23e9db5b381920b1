/**
 * Entry of an engine thread (Piscina). This module is the root of one thread, so the engines it
 * keeps are that thread's own (warm between tasks), not process-wide singletons.
 */
import type { MessagePort } from 'node:worker_threads';
import { workerData } from 'piscina';
import { TaskFailure } from '../../domain/errors.js';
import { createTtsEngines } from '../../engines/tts/setup.js';
import { synthesize, type TtsJob } from '../../engines/tts/synthesize.js';
import type { TtsRegistry } from '../../engines/tts/registry.js';
import { createSeparationEngine } from '../../engines/separation/select.js';
import type { SeparationEngine } from '../../engines/separation/engine.js';
import { runSeparation, type SeparationThreadInput } from './separation-task.js';
import { runEnhance, type EnhanceThreadInput } from './enhance-task.js';
import { runAsr, type AsrThreadInput } from './asr-task.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TtsThreadOutput {
  samples: Float32Array;
  sampleRate: number;
  engine: string;
  voiceKey: string;
  emotion: string;
}

/** Errors lose their class crossing threads: a final failure travels as data and is rebuilt. */
export type ThreadReply<T> = { ok: true; value: T } | { ok: false; failure: string };

interface ThreadTask {
  name: string;
  input: unknown;
  progressPort: MessagePort;
}

const config = workerData as { modelsDir: string; separationEngine?: string };
let tts: TtsRegistry | null = null;
let separation: SeparationEngine | null = null;

async function runTts(job: TtsJob, port: MessagePort, signal: AbortSignal): Promise<TtsThreadOutput> {
  tts ??= createTtsEngines({ modelsDir: config.modelsDir });
  const tmpDir = await mkdtemp(join(tmpdir(), 'soundry-tts-'));
  try {
    const out = await synthesize(job, tts, { tmpDir, signal, onProgress: (f) => port.postMessage(f) });
    const samples = out.audio.channels[0] ?? new Float32Array(0);
    return { samples, sampleRate: out.audio.sampleRate, engine: out.engine, voiceKey: out.voiceKey, emotion: out.emotion };
  } finally {
    await rm(tmpDir, { recursive: true, force: true });
  }
}

export default async function run(task: ThreadTask): Promise<ThreadReply<unknown>> {
  // Piscina aborts by terminating the thread; engines still get a signal for cooperative checks.
  const signal = new AbortController().signal;
  try {
    switch (task.name) {
      case 'tts':
        return { ok: true, value: await runTts(task.input as TtsJob, task.progressPort, signal) };
      case 'enhance': {
        const ctx = { tmpDir: tmpdir(), signal, onProgress: (f: number) => task.progressPort.postMessage(f) };
        // remove_background_audio / keep_music use an installed neural vocal model (SEPARATION_ENGINE) when
        // there is one; the enhancement chain's built-in speech separator otherwise (not the song DSP engine).
        const vocal = createSeparationEngine({ modelsDir: config.modelsDir, choice: config.separationEngine ?? 'auto' }).pick(350);
        return { ok: true, value: await runEnhance(task.input as EnhanceThreadInput, ctx, vocal.id === 'builtin-dsp' ? [] : [vocal]) };
      }
      case 'separation': {
        separation ??= createSeparationEngine({ modelsDir: config.modelsDir, choice: config.separationEngine ?? 'auto' });
        const ctx = { tmpDir: tmpdir(), signal, onProgress: (f: number) => task.progressPort.postMessage(f) };
        return { ok: true, value: await runSeparation(separation, task.input as SeparationThreadInput, ctx) };
      }
      case 'asr': {
        const ctx = { tmpDir: tmpdir(), signal, onProgress: (f: number) => task.progressPort.postMessage(f) };
        return { ok: true, value: await runAsr(task.input as AsrThreadInput, ctx) };
      }
      default:
        throw new Error(`unknown engine task ${task.name}`);
    }
  } catch (err) {
    if (err instanceof TaskFailure && !err.retryable) return { ok: false, failure: err.message };
    throw err;
  } finally {
    task.progressPort.close();
  }
}
