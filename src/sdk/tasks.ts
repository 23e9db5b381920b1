import { z } from 'zod';
import type { TaskKind } from '../domain/task.js';
import { aboutTask, type CreatedTask } from './errors.js';
import { cancelledError } from './guard.js';
import { SoundryError, type OnProgress, type Transport } from './transport.js';

const API = '/audio/api/v1/api-keys';

export interface WaitOptions {
  onProgress?: OnProgress;
  /** Between two queries; 500 ms by default. */
  pollIntervalMs?: number;
  /** Give up (SoundryError 'timeout') after this long; 30 minutes by default. */
  timeoutMs?: number;
  /** Aborts the request in flight and the wait (SoundryError 'cancelled', naming the task). */
  signal?: AbortSignal;
}

export interface CreateOptions {
  signal?: AbortSignal;
  /**
   * Told the task's id as soon as the server answers the create, before any wait: the task runs (and is charged)
   * whatever happens to the client next, so a caller that must survive a crash or a Ctrl-C records it here.
   */
  onCreated?: (task: CreatedTask) => void;
}

/** How one task kind is reached: its two operations and the names the spec gives its id on each side. */
export interface TaskRoute<Data extends { status: string }> {
  kind: TaskKind;
  create: string;
  get: string;
  createdIdField: 'job_id' | 'global_id';
  queryIdField: 'job_id' | 'global_id';
  data: z.ZodType<Data>;
}

/** A pause between polls that a cancel ends at once (and that leaves no listener behind on a long wait). */
const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(cancelledError(signal.reason));
    const onAbort = () => (clearTimeout(timer), reject(cancelledError(signal?.reason)));
    const timer = setTimeout(() => (signal?.removeEventListener('abort', onAbort), resolve()), ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });

/** create / get / wait for one task kind. */
export class TaskClient<Body, Data extends { status: string; error?: string | null | undefined; progress?: number | undefined }> {
  constructor(
    private readonly transport: Transport,
    private readonly route: TaskRoute<Data>,
  ) {}

  /** Creates the task and answers its id. */
  async create(body: Body, opts: CreateOptions = {}): Promise<string> {
    const data = await this.transport.post(`${API}/${this.route.create}`, body, z.looseObject({ [this.route.createdIdField]: z.string() }), opts);
    const id = data[this.route.createdIdField];
    if (typeof id !== 'string') throw new SoundryError(`${this.route.create}: no ${this.route.createdIdField} in the answer`, 'api');
    opts.onCreated?.({ id, kind: this.route.kind });
    return id;
  }

  async get(id: string, opts: { signal?: AbortSignal } = {}): Promise<Data> {
    return this.transport.post(`${API}/${this.route.get}`, { [this.route.queryIdField]: id }, this.route.data, opts);
  }

  /**
   * Polls until the task leaves waiting; a failed task throws SoundryError 'task_failed' with the server's reason.
   * Every error names the task (SoundryError.task): a server gone mid-wait used to leave the caller without its id.
   */
  async wait(id: string, opts: WaitOptions = {}): Promise<Data> {
    return aboutTask({ id, kind: this.route.kind }, async () => {
      const deadline = Date.now() + (opts.timeoutMs ?? 30 * 60_000);
      for (;;) {
        const data = await this.get(id, opts);
        if (data.status === 'success') {
          opts.onProgress?.({ phase: 'wait', done: 1, total: 1, status: data.status });
          return data;
        }
        if (data.status === 'failed') throw new SoundryError(`Task ${id} failed: ${data.error ?? 'no reason given'}`, 'task_failed');
        opts.onProgress?.({ phase: 'wait', done: data.progress ?? 0, total: 1, status: data.status });
        if (Date.now() > deadline) throw new SoundryError(`Task ${id} still ${data.status} after ${opts.timeoutMs ?? 30 * 60_000} ms`, 'timeout');
        await sleep(opts.pollIntervalMs ?? 500, opts.signal);
      }
    });
  }
}
