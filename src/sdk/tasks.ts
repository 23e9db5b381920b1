import { z } from 'zod';
import { SoundryError, type OnProgress, type Transport } from './transport.js';

const API = '/audio/api/v1/api-keys';

export interface WaitOptions {
  onProgress?: OnProgress;
  /** Between two queries; 500 ms by default. */
  pollIntervalMs?: number;
  /** Give up (SoundryError 'timeout') after this long; 30 minutes by default. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** How one task kind is reached: its two operations and the names the spec gives its id on each side. */
export interface TaskRoute<Data extends { status: string }> {
  create: string;
  get: string;
  createdIdField: 'job_id' | 'global_id';
  queryIdField: 'job_id' | 'global_id';
  data: z.ZodType<Data>;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(timer), reject(new SoundryError('Cancelled', 'timeout'))), { once: true });
  });

/** create / get / wait for one task kind. */
export class TaskClient<Body, Data extends { status: string; error?: string | null | undefined; progress?: number | undefined }> {
  constructor(
    private readonly transport: Transport,
    private readonly route: TaskRoute<Data>,
  ) {}

  /** Creates the task and answers its id. */
  async create(body: Body): Promise<string> {
    const data = await this.transport.post(`${API}/${this.route.create}`, body, z.looseObject({ [this.route.createdIdField]: z.string() }));
    const id = data[this.route.createdIdField];
    if (typeof id !== 'string') throw new SoundryError(`${this.route.create}: no ${this.route.createdIdField} in the answer`, 'api');
    return id;
  }

  async get(id: string): Promise<Data> {
    return this.transport.post(`${API}/${this.route.get}`, { [this.route.queryIdField]: id }, this.route.data);
  }

  /** Polls until the task leaves waiting; a failed task throws SoundryError 'task_failed' with the server's reason. */
  async wait(id: string, opts: WaitOptions = {}): Promise<Data> {
    const deadline = Date.now() + (opts.timeoutMs ?? 30 * 60_000);
    for (;;) {
      const data = await this.get(id);
      if (data.status === 'success') {
        opts.onProgress?.({ phase: 'wait', done: 1, total: 1, status: data.status });
        return data;
      }
      if (data.status === 'failed') throw new SoundryError(`Task ${id} failed: ${data.error ?? 'no reason given'}`, 'task_failed');
      opts.onProgress?.({ phase: 'wait', done: data.progress ?? 0, total: 1, status: data.status });
      if (Date.now() > deadline) throw new SoundryError(`Task ${id} still ${data.status} after ${opts.timeoutMs ?? 30 * 60_000} ms`, 'timeout');
      await sleep(opts.pollIntervalMs ?? 500, opts.signal);
    }
  }
}
