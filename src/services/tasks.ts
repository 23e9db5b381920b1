import { randomUUID } from 'node:crypto';
import { AppError } from '../domain/errors.js';
import type { TaskKind } from '../domain/task.js';
import type { JobQueue } from '../ports/queue.js';
import type { TaskStore } from '../ports/task-store.js';
import type { Caller } from './auth.js';
import type { KindApi, PresentTools } from './kinds/kind-api.js';

export interface TaskServiceDeps {
  tasks: TaskStore;
  queue: JobQueue;
  kinds: ReadonlyMap<TaskKind, KindApi>;
  taskTtlMs: number;
  /** Signs a result URL; `notAfterMs` caps its expiry (the task's own expiry). */
  fileUrl: (key: string, notAfterMs: number) => string;
  now?: () => number;
}

/** Create and query use cases shared by all five task kinds. */
export class TaskService {
  private readonly now: () => number;
  private readonly position: PresentTools['position'];

  constructor(private readonly deps: TaskServiceDeps) {
    this.now = deps.now ?? Date.now;
    this.position = (id) => deps.queue.position(id);
  }

  isAvailable(kind: TaskKind): boolean {
    return this.deps.kinds.has(kind);
  }

  /** Order of refusals: capability, kind checks (validation), credits, concurrency. */
  async create(kind: TaskKind, body: unknown, caller: Caller): Promise<string> {
    const api = this.deps.kinds.get(kind);
    if (!api) throw new AppError('CAPABILITY_NOT_AVAILABLE', `Capability not available on this server: ${kind}`);
    const prepared = await api.prepare(body, caller);
    const balance = caller.account.balance;
    if (balance <= 0 || (prepared.knownPrice !== null && balance < prepared.knownPrice)) {
      throw new AppError('INSUFFICIENT_CREDITS');
    }
    if ((await this.deps.tasks.countUnfinishedForKey(caller.key.id, caller.concurrency)) >= caller.concurrency) {
      throw new AppError('CONCURRENCY_LIMITED');
    }
    const now = this.now();
    const id = randomUUID().replace(/-/g, '');
    await this.deps.tasks.create({
      id,
      kind,
      accountId: caller.account.id,
      apiKeyId: caller.key.id,
      params: prepared.params,
      createdAt: now,
      expiresAt: now + this.deps.taskTtlMs,
    });
    try {
      await this.deps.queue.enqueue({ taskId: id, kind });
    } catch (err) {
      // Never leave a task that no worker will ever see.
      await this.deps.tasks.completeFailure(id, 'Could not queue the task', this.now());
      throw err;
    }
    return id;
  }

  /** Unknown, expired, other-account and other-kind ids all answer 101008. */
  async get(kind: TaskKind, id: string, caller: Caller): Promise<Record<string, unknown>> {
    const task = await this.deps.tasks.get(id);
    if (!task || task.kind !== kind || task.accountId !== caller.account.id || task.expiresAt <= this.now()) {
      throw new AppError('TASK_NOT_FOUND');
    }
    const api = this.deps.kinds.get(kind);
    if (!api) throw new AppError('TASK_NOT_FOUND');
    // Links die with the task: the reaper runs every few minutes, a link must not outlive the TTL meanwhile.
    return api.present(task, { fileUrl: (key) => this.deps.fileUrl(key, task.expiresAt), position: this.position });
  }
}
