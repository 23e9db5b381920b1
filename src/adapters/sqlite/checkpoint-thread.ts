import { statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * The thread's code, evaluated as CommonJS (so it runs the same under tsx, vitest and compiled
 * JavaScript): its own connection to the database runs each PASSIVE checkpoint it is asked for.
 */
const THREAD_CODE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path, { fileMustExist: true });
parentPort.on('message', (message) => {
  if (message === 'close') {
    db.close();
    parentPort.close();
    return;
  }
  try {
    const [row] = db.pragma('wal_checkpoint(PASSIVE)');
    parentPort.postMessage({ ok: true, busy: row ? row.busy : 0 });
  } catch (err) {
    parentPort.postMessage({ ok: false, error: String(err) });
  }
});
`;

/** WAL size at which the process checkpoints on its own thread after all (the checkpoint thread is stuck or gone). */
const FALLBACK_WAL_BYTES = 256 * 1024 * 1024;

/**
 * Checkpoints of the embedded database on a thread of their own. SQLite's automatic checkpoint runs
 * inside the commit that crosses 1000 WAL pages, on the event loop, and ends with an fsync of the
 * database file: in a create-heavy load it was half of each create's commit cost (a micro-benchmark
 * on this 2-core machine: 48 -> 23 us per create) and stalled every request meanwhile. The server's
 * connection turns it off (wal_autocheckpoint = 0) and this thread's own connection copies the WAL
 * into the database every `intervalMs` instead (PASSIVE: it never blocks the writer, whose commits
 * keep appending). Should the thread die, `fallback` (a checkpoint on the caller's connection) runs
 * whenever the WAL passes 256 MiB, and the full TRUNCATE checkpoint at close stays the caller's.
 */
export class CheckpointThread {
  private readonly worker: Worker;
  private readonly timer: NodeJS.Timeout;
  private inFlight = false;
  private alive = true;

  constructor(
    private readonly path: string,
    intervalMs: number,
    private readonly fallback: () => void,
    private readonly onError: (message: string) => void = () => undefined,
    private readonly fallbackWalBytes = FALLBACK_WAL_BYTES,
  ) {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    this.worker = new Worker(THREAD_CODE, { eval: true, workerData: { path, driver } });
    this.worker.unref();
    this.worker.on('message', (reply: { ok: boolean; error?: string }) => {
      this.inFlight = false;
      if (!reply.ok && reply.error) this.onError(reply.error);
    });
    this.worker.on('error', (err) => {
      this.alive = false;
      this.onError(String(err));
    });
    this.worker.on('exit', () => {
      this.alive = false;
    });
    this.timer = setInterval(() => this.tick(), intervalMs);
    this.timer.unref();
  }

  private tick(): void {
    if (this.alive && !this.inFlight) {
      this.inFlight = true;
      this.worker.postMessage('checkpoint');
      return;
    }
    if (walBytes(this.path) > this.fallbackWalBytes) this.fallback();
  }

  /** Stops the timer and the thread (after a checkpoint it is running, if any). */
  async close(): Promise<void> {
    clearInterval(this.timer);
    if (!this.alive) return;
    const exited = new Promise<void>((resolve) => this.worker.once('exit', () => resolve()));
    // Unreferenced, the thread would not keep the process alive while close() waits for it: a process
    // with nothing else left (a stop during start-up) would end in the middle of its shutdown.
    this.worker.ref();
    this.worker.postMessage('close');
    await exited;
  }
}

function walBytes(path: string): number {
  try {
    return statSync(`${path}-wal`).size;
  } catch {
    return 0;
  }
}
