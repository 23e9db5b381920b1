import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { TaskFailure } from '../domain/errors.js';
import { THREAD_RUN_ABORT, THREAD_RUN_STARTED, type EngineThreads, type ThreadEnv, type ThreadName, type ThreadRunOptions, type ThreadTasks } from '../kinds/threads.js';
import type { ThreadPing, ThreadReply } from './engine-thread.js';

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

/** Why a run or the health probe failed when no engine thread could run it (the threads' own error). */
class ThreadsCannotStart extends Error {
  constructor(why: string) {
    super(`engine threads cannot start: ${why}`);
  }
}

/**
 * CPU-heavy engine work runs here, off the API's event loop. One pool per process, in two lanes made on
 * first use (an API node rendering voice samples only ever starts the short one); threads keep their
 * engines warm between tasks (the first espeak synthesis in a thread is 3-4x slower).
 */
export class EngineThreadPool implements EngineThreads {
  private readonly lanes = new Map<Lane, Piscina>();
  /** Each lane's runs not settled yet, to fail them when the lane is left with no thread to run them. */
  private readonly unsettled = new Map<Lane, Set<AbortController>>();
  /** A thread has answered since the last failure: threads start and load the engines. */
  private answered = false;
  /** Why the last thread failed outside a run (or a probe failed), until a thread answers again. */
  private failure: string | null = null;
  private probing: Promise<void> | null = null;
  private destroyed = false;

  constructor(
    private readonly opts: {
      threads: number;
      shortThreads?: number;
      env: ThreadEnv;
      /** A thread failed outside any run (it could not start, or crashed between runs): for the log. */
      onThreadError?: (err: Error) => void;
    },
  ) {}

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
      // Piscina emits 'error' when a thread fails with no run to reject: a thread that cannot start (a broken
      // install, a module that throws on import) fails the run that started it, and then every thread Piscina
      // starts to keep minThreads. Unheard, that 'error' ended the whole process, API included.
      // Then Piscina keeps the runs that wait for a thread queued forever (their tasks hung as running): with no
      // thread left in the lane, they fail now, naming why.
      const lanePool = piscina;
      piscina.on('error', (err: unknown) => {
        const error = err instanceof Error ? err : new Error(String(err));
        this.failed(error.message);
        this.opts.onThreadError?.(error);
        if (lanePool.threads.length > 0) return;
        for (const stranded of this.unsettled.get(lane) ?? []) stranded.abort(new ThreadsCannotStart(error.message));
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
    let started = false;
    channel.port1.on('message', (message: number | typeof THREAD_RUN_STARTED) => {
      if (message === THREAD_RUN_STARTED) started = true;
      else opts.onProgress(message);
    });
    const lane = LANES[name];
    /**
     * Short work (a sentence, a TTS text) is not worth its thread: Piscina aborts a running job by terminating the
     * thread, and a new one loads the engines again (about 1.3 s of CPU). Found from outside: a client resetting
     * /v1/audio/speech requests before their first audio kept the threads restarting, at 141% CPU. A short run
     * that has started is asked to stop instead (its engines check the signal) and finishes in the background;
     * one still waiting for a thread is taken out of the queue; the caller is answered at once either way.
     */
    const cooperative = lane === 'short';
    const queued = new AbortController();
    const onAbort = () => {
      if (started) channel.port1.postMessage(THREAD_RUN_ABORT);
      else queued.abort(opts.signal.reason);
    };
    if (cooperative) {
      if (opts.signal.aborted) onAbort();
      else opts.signal.addEventListener('abort', onAbort, { once: true });
    }
    // The thread answers with the output of `name` (engine-thread.ts dispatches on the same table type).
    const job = this.submit<ThreadTasks[N]['output']>(
      lane,
      { name, input, progressPort: channel.port2, tmpDir: scratch },
      { signal: cooperative ? queued.signal : opts.signal, transferList: [channel.port2] },
    );
    // Registered first, so it has run by the time an answer from the job reaches the code below.
    let settled = false;
    const ended = job.then(
      () => void (settled = true),
      () => void (settled = true),
    );
    const cleanUp = async () => {
      opts.signal.removeEventListener('abort', onAbort);
      channel.port1.close();
      if (scratch !== opts.tmpDir) await rm(scratch, { recursive: true, force: true, maxRetries: 2 });
    };
    try {
      const reply = cooperative ? await untilAborted(job, opts.signal) : await job;
      this.threadAnswered();
      if (!reply.ok) throw new TaskFailure(reply.failure);
      return reply.value;
    } finally {
      // A run still going after its caller left cleans up once it ends (its thread may still write in the scratch).
      if (settled) await cleanUp();
      else void ended.then(cleanUp).catch(() => undefined);
    }
  }

  /** One run in a lane: the caller's signal aborts it, and so does the lane when no thread is left to run it. */
  private async submit<T>(lane: Lane, message: unknown, opts: { signal?: AbortSignal; transferList?: MessagePort[] }): Promise<ThreadReply<T>> {
    const piscina = this.lane(lane);
    const stranded = new AbortController();
    let waiting = this.unsettled.get(lane);
    if (!waiting) this.unsettled.set(lane, (waiting = new Set()));
    waiting.add(stranded);
    try {
      return await piscina.run(message, { ...opts, signal: opts.signal ? AbortSignal.any([opts.signal, stranded.signal]) : stranded.signal });
    } catch (err) {
      // Piscina rejects an aborted run with its own AbortError; the lane's reason is the one to tell.
      if (stranded.signal.aborted && !opts.signal?.aborted) throw stranded.signal.reason;
      throw err;
    } finally {
      waiting.delete(stranded);
    }
  }

  /**
   * For /healthz, without waiting (a probe that waited for a thread to start held /healthz for seconds on a
   * busy machine): 'ok' once a thread has answered, 'starting' until then; throws naming why threads cannot
   * start once that is known. The first call, and any after a failure, sends a no-op through the short lane
   * in the background, so a recovery shows at a later call; once a thread has answered, nothing is sent.
   * Without it, threads that could not start showed only as every task failing.
   */
  async health(): Promise<string> {
    if (this.destroyed) return 'stopped';
    if (this.answered && this.failure === null) return 'ok';
    this.probing ??= this.probe()
      .catch(() => {}) // the failure is kept in this.failure and reported below, at this call or the next
      .finally(() => (this.probing = null));
    return this.known() === 'ok' ? 'ok' : 'starting';
  }

  /** What is known without starting a thread: throws if the last thread failed; 'not started' if none ran. */
  known(): string {
    if (this.failure !== null) throw new ThreadsCannotStart(this.failure);
    return this.answered ? 'ok' : 'not started';
  }

  private async probe(): Promise<void> {
    try {
      const reply = await this.submit<unknown>('short', { name: 'ping' } satisfies ThreadPing, {});
      if (!reply.ok || reply.value !== 'pong') throw new Error(`unexpected answer to a ping: ${JSON.stringify(reply)}`);
      this.threadAnswered();
    } catch (err) {
      if (err instanceof ThreadsCannotStart) throw err;
      const message = err instanceof Error ? err.message : String(err);
      this.failed(message);
      throw new ThreadsCannotStart(message);
    }
  }

  private threadAnswered(): void {
    this.answered = true;
    this.failure = null;
  }

  private failed(message: string): void {
    this.answered = false;
    this.failure = message;
  }

  /** The threads' ids, lane by lane: which threads are alive (diagnostics; a test checks a cancel kept its thread). */
  threadIds(): number[] {
    return [...this.lanes.values()].flatMap((p) => p.threads.map((t) => t.threadId));
  }

  get threads(): number {
    return [...this.lanes.values()].reduce((n, p) => n + p.threads.length, 0);
  }

  async destroy(): Promise<void> {
    this.destroyed = true;
    await Promise.all([...this.lanes.values()].map((p) => p.destroy()));
    this.lanes.clear();
  }
}

/** `work`, or the signal's reason as soon as it aborts (work goes on). */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}
