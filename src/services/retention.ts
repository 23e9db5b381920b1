import type { Logger } from 'pino';
import type { BlobStore } from '../ports/blob-store.js';
import type { TaskStore } from '../ports/task-store.js';

/**
 * How long a partial upload file must go unwritten before the reaper takes it for one left by a dead process.
 * Another live process on the same DATA_DIR (an API node beside a ROLE=all one) may be writing one right now, and
 * its age is measured from its last write (mtime), so an upload slower than this but still progressing is never
 * removed. An upload still running can go without a write for at most its whole deadline, UPLOAD_TIMEOUT_SECONDS
 * (the rate floor UPLOAD_MIN_BYTES_PER_SECOND keeps gaps much shorter, but 0 turns it off), so the age is never
 * below that, plus a minute for the deadline check's lateness (up to 5 s) and clock drift on a shared disk.
 */
export function partialUploadAgeMs(uploadTimeoutMs: number): number {
  return Math.max(3600_000, uploadTimeoutMs + 60_000);
}

/** Why a task still queued at its expiry was failed instead of run (no worker took its kind for TASK_TTL_SECONDS). */
export const EXPIRED_IN_QUEUE_REASON = 'The task expired (TASK_TTL_SECONDS) before a worker could start it; nothing was charged';

/**
 * Deletes expired tasks and their files. Files go first: a crash between the two steps leaves a
 * task row without files (still answered 101008 since it is expired), never orphaned files.
 * A running task is left to finish (it is then kept a while, see the store's completion); a queued one
 * that no worker started by its expiry is failed, which releases what it held, and deleted later.
 */
export class RetentionReaper {
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly deps: { tasks: TaskStore; blobs: BlobStore; logger: Logger },
    private readonly intervalMs: number,
    /** Uploads have no task row: they expire by age, with the same TTL as tasks. */
    private readonly uploadTtlMs: number,
    /** partialUploadAgeMs(UPLOAD_TIMEOUT_SECONDS). */
    private readonly partialAgeMs: number,
  ) {}

  start(): void {
    const tick = () => {
      // warn, not error: the usual cause is a store that cannot be reached for a while, and the next sweep retries.
      this.sweep().catch((err) => this.deps.logger.warn({ err }, 'retention sweep failed; the next sweep tries again'));
    };
    this.timer = setInterval(tick, this.intervalMs);
    this.timer.unref();
    tick();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /**
   * Returns the number of tasks and uploads removed. Partial uploads left by a crash go too: a restart within
   * partialAgeMs of the crash used to leave them (start-up alone looked for them) until their entry's TTL.
   */
  async sweep(now = Date.now()): Promise<number> {
    await this.removePartialUploads(now - this.partialAgeMs);
    let removed = await this.deps.blobs.deleteOlderThan('uploads', now - this.uploadTtlMs);
    for (;;) {
      const batch = await this.deps.tasks.listExpired(now, 100);
      if (batch.length === 0) return removed;
      for (const task of batch) {
        if (task.state === 'queued') {
          if (await this.deps.tasks.completeFailure(task.id, EXPIRED_IN_QUEUE_REASON, now)) this.deps.logger.info({ taskId: task.id, kind: task.kind }, 'task expired in the queue: failed');
          continue;
        }
        await this.deps.blobs.deletePrefix(`tasks/${task.id}/`);
        await this.deps.tasks.delete(task.id);
        removed++;
      }
    }
  }

  /** Partial upload files last written before `cutoffMs`; the caller vouches that no live upload is that old. */
  async removePartialUploads(cutoffMs: number): Promise<number> {
    const files = await this.deps.blobs.removePartialsOlderThan('uploads', cutoffMs);
    if (files > 0) this.deps.logger.info({ files }, 'removed partial uploads left by a process that died');
    return files;
  }
}
