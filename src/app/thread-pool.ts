import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MessageChannel } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { TaskFailure } from '../domain/errors.js';
import type { EngineThreads, ThreadEnv, ThreadName, ThreadRunOptions, ThreadTasks } from '../kinds/threads.js';
import type { ThreadReply } from './engine-thread.js';

type Lane = 'short' | 'long';

/**
 * Which lane each piece of thread work runs in. A TTS sentence takes a fraction of a second; a separation
 * or an enhancement can hold a thread for minutes. In one pool a short task queued behind long ones waited
 * for them (measured from outside: short TTS tasks waited 236 s on average for 0.8 s of work), so short work
 * has threads of its own that long work never takes.
 */
const LANES: { readonly [N in ThreadName]: Lane } = { tts: 'short', separation: 'long', enhance: 'long', asr: 'long', llm: 'long' };

/**
 * The process's Node flags an engine thread takes: how to load modules (`--import tsx` under npm start),
 * warnings and experimental features. Node refuses V8 and process-wide flags in a thread's execArgv
 * (`--max-old-space-size`, `--expose-gc`, `--stack-size`, `--perf-basic-prof`, `--title`...): with one of them
 * on the command line the threads never started, and every engine task failed as an internal error. Those
 * flags apply to every thread of the process anyway. In execArgv a token without a dash is the value of
 * the flag before it (the script and its arguments are not there), so it goes or stays with that flag.
 */
const THREAD_FLAG = /^--(import|require|loader|experimental-loader|conditions|experimental-[\w-]+|no-experimental-[\w-]+|enable-source-maps|no-warnings|disable-warning|trace-warnings|no-deprecation|trace-deprecation|throw-deprecation|pending-deprecation|unhandled-rejections|preserve-symlinks|preserve-symlinks-main)(=|$)/;
const SHORT_FLAGS: Readonly<Record<string, string>> = { '-r': '--require', '-C': '--conditions' };

export function threadExecArgv(execArgv: readonly string[]): string[] {
  const out: string[] = [];
  let keepValue = false;
  for (const token of execArgv) {
    if (!token.startsWith('-')) {
      if (keepValue) out.push(token);
      continue;
    }
    const flag = SHORT_FLAGS[token] ?? token;
    keepValue = THREAD_FLAG.test(flag);
    if (keepValue) out.push(flag);
  }
  return out;
}

/**
 * CPU-heavy engine work runs here, off the API's event loop. One pool per process, in two lanes made on
 * first use (an API node rendering voice samples only ever starts the short one); threads keep their
 * engines warm between tasks (the first espeak synthesis in a thread is 3-4x slower).
 */
export class EngineThreadPool implements EngineThreads {
  private readonly lanes = new Map<Lane, Piscina>();

  constructor(private readonly opts: { threads: number; shortThreads?: number; env: ThreadEnv }) {}

  private lane(lane: Lane): Piscina {
    let piscina = this.lanes.get(lane);
    if (!piscina) {
      const runningFromSource = import.meta.url.endsWith('.ts');
      const inherited = threadExecArgv(process.execArgv);
      // Under tsx (npm start) or vitest the sources are .ts: the thread needs the tsx loader too.
      const execArgv = runningFromSource && !inherited.some((a) => a.includes('tsx')) ? [...inherited, '--import', 'tsx'] : inherited;
      piscina = new Piscina({
        filename: fileURLToPath(new URL(runningFromSource ? './engine-thread-source.mjs' : './engine-thread.js', import.meta.url)),
        minThreads: 1,
        maxThreads: lane === 'short' ? (this.opts.shortThreads ?? 1) : this.opts.threads,
        idleTimeout: 10 * 60_000,
        execArgv,
        workerData: this.opts.env,
      });
      this.lanes.set(lane, piscina);
    }
    return piscina;
  }

  async run<N extends ThreadName>(name: N, input: ThreadTasks[N]['input'], opts: ThreadRunOptions): Promise<ThreadTasks[N]['output']> {
    // Made and removed here, not in the thread: an abort terminates the thread before its own cleanup runs.
    // A caller's own folder (a task's) is removed by the caller, whatever happens to the thread.
    const scratch = opts.tmpDir ?? (await mkdtemp(join(this.opts.env.tmpDir ?? tmpdir(), this.opts.env.tmpDir ? `${name}-` : `soundry-${name}-`)));
    const channel = new MessageChannel();
    channel.port1.on('message', (fraction: number) => opts.onProgress(fraction));
    try {
      // The thread answers with the output of `name` (engine-thread.ts dispatches on the same table type).
      const reply: ThreadReply<ThreadTasks[N]['output']> = await this.lane(LANES[name]).run(
        { name, input, progressPort: channel.port2, tmpDir: scratch },
        { signal: opts.signal, transferList: [channel.port2] },
      );
      if (!reply.ok) throw new TaskFailure(reply.failure);
      return reply.value;
    } finally {
      channel.port1.close();
      if (scratch !== opts.tmpDir) await rm(scratch, { recursive: true, force: true, maxRetries: 2 });
    }
  }

  get threads(): number {
    return [...this.lanes.values()].reduce((n, p) => n + p.threads.length, 0);
  }

  async destroy(): Promise<void> {
    await Promise.all([...this.lanes.values()].map((p) => p.destroy()));
    this.lanes.clear();
  }
}
