import { MessageChannel } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { TaskFailure } from '../../domain/errors.js';
import type { ThreadReply } from './engine-thread.js';

export interface ThreadTaskOptions {
  signal: AbortSignal;
  onProgress(fraction: number): void;
}

/**
 * CPU-heavy engine work runs here, off the API's event loop. One pool per process; threads keep
 * their engines warm between tasks (the first espeak synthesis in a thread is 3-4x slower).
 */
export class EngineThreadPool {
  private readonly piscina: Piscina;

  constructor(opts: { threads: number; workerData: Record<string, unknown> }) {
    const url = new URL('./engine-thread.js', import.meta.url);
    const tsUrl = new URL('./engine-thread.ts', import.meta.url);
    // Under tsx (npm start) or vitest the sources are .ts: the thread needs the tsx loader too.
    const runningFromSource = import.meta.url.endsWith('.ts');
    const execArgv = runningFromSource && !process.execArgv.some((a) => a.includes('tsx')) ? [...process.execArgv, '--import', 'tsx'] : process.execArgv;
    this.piscina = new Piscina({
      filename: fileURLToPath(runningFromSource ? tsUrl : url),
      minThreads: 1,
      maxThreads: opts.threads,
      idleTimeout: 10 * 60_000,
      execArgv,
      workerData: opts.workerData,
    });
  }

  async run<T>(name: string, input: unknown, opts: ThreadTaskOptions): Promise<T> {
    const channel = new MessageChannel();
    channel.port1.on('message', (fraction: number) => opts.onProgress(fraction));
    try {
      const reply = (await this.piscina.run(
        { name, input, progressPort: channel.port2 },
        { signal: opts.signal, transferList: [channel.port2] },
      )) as ThreadReply<T>;
      if (!reply.ok) throw new TaskFailure(reply.failure);
      return reply.value;
    } finally {
      channel.port1.close();
    }
  }

  get threads(): number {
    return this.piscina.threads.length;
  }

  async destroy(): Promise<void> {
    await this.piscina.destroy();
  }
}
