import { randomUUID } from 'node:crypto';
import { AppError, concurrencyLimited } from '../domain/errors.js';
import { isFinished, newTaskId, type QueriedTask, type TaskKind } from '../domain/task.js';
import type { BlobUrls } from '../ports/blob-store.js';
import type { JobQueue } from '../ports/queue.js';
import type { TaskStore } from '../ports/task-store.js';
import type { Caller } from './auth.js';
import type { KindApi, PresentTools } from '../kinds/kind.js';

export interface TaskServiceDeps {
  tasks: TaskStore;
  queue: JobQueue;
  /**
   * True when the task store's create writes the job in the task's own transaction (the SQL queue on the
   * task database); false: the job is added after the task row (BullMQ), see enqueueOrFail.
   */
  storeEnqueues: boolean;
  /** The API side of every kind (bodies arrive validated by the kind's own route schema). */
  kinds: Readonly<Partial<Record<TaskKind, KindApi<unknown>>>>;
  taskTtlMs: number;
  /** Issues result URLs (signed /files/ links or S3 presigned URLs, see BlobUrls). */
  urls: Pick<BlobUrls, 'url' | 'maxTtlSeconds'>;
  /** How long a result link lives at most (FILE_URL_TTL_SECONDS). */
  fileUrlTtlSeconds: number;
  /**
   * Checks a create's callback_url against the SSRF guard (the same rules as input URLs); rejects with a
   * message that can be shown to the client.
   */
  checkCallbackUrl(url: string): Promise<void>;
  /**
   * Told after each task is created and queued: this process's workers (ROLE=all) start it at once
   * instead of at their next poll of the queue.
   */
  /** Told why a create's job could not be queued (the answer is a 503; the log says why). */
  onEnqueueFailed?: (err: unknown) => void;
  onCreated?: () => void;
  now?: () => number;
}

/** Create and query use cases shared by all five task kinds. */
export class TaskService {
  private readonly now: () => number;

  constructor(private readonly deps: TaskServiceDeps) {
    this.now = deps.now ?? Date.now;
  }

  isAvailable(kind: TaskKind): boolean {
    return this.deps.kinds[kind] !== undefined;
  }

  /** Order of refusals: capability, kind checks (validation), credits, concurrency. */
  async create(kind: TaskKind, body: unknown, caller: Caller, callbackUrl?: string): Promise<string> {
    const api = this.deps.kinds[kind];
    if (!api) throw new AppError('CAPABILITY_NOT_AVAILABLE', `Capability not available on this server: ${kind}`);
    const prepared = await api.prepare(body, caller);
    if (callbackUrl !== undefined) {
      try {
        await this.deps.checkCallbackUrl(callbackUrl);
      } catch (err) {
        throw new AppError('CALLBACK_URL_REFUSED', `Callback URL not allowed: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    const balance = caller.account.balance;
    if (balance <= 0 || (prepared.knownPrice !== null && balance < prepared.knownPrice)) {
      throw new AppError('INSUFFICIENT_CREDITS');
    }
    const now = this.now();
    const id = newTaskId(now, randomUUID().replace(/-/g, ''));
    // The concurrency check is the store's: counting here and inserting after let racing creates overshoot.
    const created = await this.deps.tasks.createWithinLimit(
      {
        id,
        kind,
        accountId: caller.account.id,
        apiKeyId: caller.key.id,
        params: prepared.params,
        createdAt: now,
        expiresAt: now + this.deps.taskTtlMs,
        ...(callbackUrl !== undefined ? { callbackUrl } : {}),
        // Held until the task finishes, so tasks created together cannot promise more than the balance.
        ...(prepared.knownPrice !== null ? { hold: prepared.knownPrice } : {}),
        ...(prepared.holdUpTo !== undefined ? { holdUpTo: prepared.holdUpTo } : {}),
      },
      caller.concurrency,
    );
    if (!created.created && created.reason === 'insufficient_credits') throw new AppError('INSUFFICIENT_CREDITS');
    // A task runs for seconds at least: polling sooner than that only spends the rate limit.
    if (!created.created) throw concurrencyLimited(caller.concurrency, 5);
    if (!this.deps.storeEnqueues) await this.enqueueOrFail(id, kind);
    this.deps.onCreated?.();
    return id;
  }

  /**
   * The job goes in after the task row (the queue is not in the task database). The job id is the
   * task id, so adding twice is harmless; a crash between the two steps leaves a queued task
   * without a job, which the queue's consumers re-enqueue when they start.
   */
  private async enqueueOrFail(id: string, kind: TaskKind): Promise<void> {
    try {
      // Bounded: with Redis down, each add waited on the client's reconnects (0.2 s, then up to 10 s, found from outside).
      await withTimeout(this.deps.queue.enqueue({ taskId: id, kind }), ENQUEUE_TIMEOUT_MS);
    } catch (err) {
      // Never leave a task that no worker will ever see, and make the answer true: the task was not created. Removed
      // (its hold and unfinished count go with it); it was kept as a failed task, which the admin page's usage counted
      // and a poll of its id showed (found from outside). A job added after the timeout finds no task and is dropped.
      await this.deps.tasks.delete(id);
      this.deps.onEnqueueFailed?.(err);
      // The queue's trouble, not the request's: 503 with Retry-After, as while draining, instead of an internal error.
      throw new AppError('SERVICE_UNAVAILABLE', 'Service unavailable: the task queue cannot be reached; the task was not created and nothing was charged. Try again shortly', 5);
    }
  }

  /** Unknown, expired, other-account and other-kind ids all answer 101008. */
  async get(kind: TaskKind, id: string, caller: Caller): Promise<Record<string, unknown>> {
    const task = await this.deps.tasks.getForQuery(id);
    if (!task || task.kind !== kind || task.accountId !== caller.account.id || this.expired(task)) {
      throw new AppError('TASK_NOT_FOUND');
    }
    const data = await this.present(task);
    if (!data) throw new AppError('TASK_NOT_FOUND');
    return data;
  }

  /**
   * Past its expiry and finished. A task still queued or running at its expiry is answered as it is: the reaper
   * leaves a running one to finish (then kept a while) and fails a queued one; answering 101008 meanwhile told
   * clients it was gone, and they stopped polling a task they were then charged for (found from outside).
   */
  private expired(task: QueriedTask): boolean {
    return isFinished(task.state) && task.expiresAt <= this.now();
  }

  /**
   * A task's query data, for a callback: what task/get answers its owner. Null when the task is gone or
   * expired.
   */
  async presentById(id: string): Promise<{ kind: TaskKind; data: Record<string, unknown> } | null> {
    const task = await this.deps.tasks.getForQuery(id);
    if (!task || this.expired(task)) return null;
    try {
      const data = await this.present(task);
      return data ? { kind: task.kind, data } : null;
    } catch (err) {
      if (err instanceof AppError && err.errorName === 'TASK_NOT_FOUND') return null; // reaped between two reads
      throw err;
    }
  }

  private async present(task: QueriedTask): Promise<Record<string, unknown> | null> {
    const api = this.deps.kinds[task.kind];
    if (!api) return null;
    return api.present(task, {
      fileUrl: (key) => this.resultUrl(key, task.expiresAt),
      position: (taskId) => this.deps.queue.position({ taskId, kind: task.kind }),
      params: async () => {
        const params = await this.deps.tasks.getParams(task.id);
        // Deleted between the two reads (the reaper): as if the first had not found it.
        if (!params) throw new AppError('TASK_NOT_FOUND');
        return params;
      },
    });
  }

  /**
   * Links die with the task: the reaper runs every few minutes, a link must not outlive the task
   * meanwhile. Also capped by the file TTL and by what the issuer can give (7 days when presigned).
   */
  private resultUrl(key: string, taskExpiresAtMs: number): Promise<string> {
    const left = Math.floor((taskExpiresAtMs - this.now()) / 1000);
    return this.deps.urls.url(key, Math.max(1, Math.min(this.deps.fileUrlTtlSeconds, this.deps.urls.maxTtlSeconds, left)));
  }
}

/** How long a create waits for the queue to take its job. */
const ENQUEUE_TIMEOUT_MS = 3000;

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the queue did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}
