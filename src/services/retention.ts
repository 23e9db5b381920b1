import type { Logger } from 'pino';
import type { BlobStore } from '../ports/blob-store.js';
import type { TaskStore } from '../ports/task-store.js';

/**
 * Deletes expired tasks and their files. Files go first: a crash between the two steps leaves a
 * task row without files (still answered 101008 since it is expired), never orphaned files.
 */
export class RetentionReaper {
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly deps: { tasks: TaskStore; blobs: BlobStore; logger: Logger },
    private readonly intervalMs: number,
    /** Uploads have no task row: they expire by age, with the same TTL as tasks. */
    private readonly uploadTtlMs: number,
  ) {}

  start(): void {
    const tick = () => {
      this.sweep().catch((err) => this.deps.logger.error({ err }, 'retention sweep failed'));
    };
    this.timer = setInterval(tick, this.intervalMs);
    this.timer.unref();
    tick();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Returns the number of tasks and uploads removed. */
  async sweep(now = Date.now()): Promise<number> {
    let removed = await this.deps.blobs.deleteOlderThan('uploads', now - this.uploadTtlMs);
    for (;;) {
      const batch = await this.deps.tasks.listExpired(now, 100);
      if (batch.length === 0) return removed;
      for (const task of batch) {
        await this.deps.blobs.deletePrefix(`tasks/${task.id}/`);
        await this.deps.tasks.delete(task.id);
        removed++;
      }
    }
  }
}
