import { statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * The thread's code, evaluated as CommonJS (so it runs the same under tsx, vitest and compiled
 * JavaScript): its own connection to the database runs each PASSIVE checkpoint it is asked for and
 * answers how many frames the WAL held and how many of them are now in the database.
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
    parentPort.postMessage({ ok: true, busy: row ? row.busy : 0, log: row ? row.log : 0, checkpointed: row ? row.checkpointed : 0 });
  } catch (err) {
    parentPort.postMessage({ ok: false, error: String(err) });
  }
});
`;

interface Reply {
  ok: boolean;
  error?: string;
  busy?: number;
  /** Frames in the WAL when the checkpoint ran (-1: not in WAL mode). */
  log?: number;
  /** Of those, the frames now copied into the database. */
  checkpointed?: number;
}

/** WAL size at which the process checkpoints on its own thread after all (the checkpoint thread is stuck or gone). */
const FALLBACK_WAL_BYTES = 256 * 1024 * 1024;

/** Frames (pages) in the WAL from which a checkpoint holds the writes off to let the WAL start again: 4 MiB, SQLite's own automatic checkpoint's size. */
const RESTART_FRAMES = 1000;

/** The longest the writes are held for one checkpoint: past it they go on and the checkpoint finishes beside them. */
const HOLD_LIMIT_MS = 500;

export interface CheckpointThreadOptions {
  /** How often the thread checkpoints. */
  intervalMs: number;
  /** A checkpoint on the caller's own connection, for when the thread is gone and the WAL passes `fallbackWalBytes`. */
  fallback: () => void;
  onError?: (message: string) => void;
  fallbackWalBytes?: number;
  /**
   * Runs `work` while this process writes nothing to the database (the writer connection's mutex held). Without it,
   * a WAL that commits keep appending to is never started again: see the class's comment.
   */
  holdWrites?: (work: () => Promise<void>) => Promise<void>;
  restartFrames?: number;
}

/**
 * Checkpoints of the embedded database on a thread of their own. SQLite's automatic checkpoint runs
 * inside the commit that crosses 1000 WAL pages, on the event loop, and ends with an fsync of the
 * database file: in a create-heavy load it was half of each create's commit cost (a micro-benchmark
 * on this 2-core machine: 48 -> 23 us per create) and stalled every request meanwhile. The server's
 * connection turns it off (wal_autocheckpoint = 0) and this thread's own connection copies the WAL
 * into the database every `intervalMs` instead (PASSIVE: it never blocks the writer, whose commits
 * keep appending). Should the thread die, `fallback` (a checkpoint on the caller's connection) runs
 * whenever the WAL passes 256 MiB, and the full TRUNCATE checkpoint at close stays the caller's.
 *
 * A commit starts the WAL again from its beginning only when a checkpoint has copied all of it before the
 * commit began. Under a steady write load the writer always appends while the thread copies, so that never
 * happened: the WAL grew by every commit's pages (500 MB in 6 s of creates, 1.6 GB a few minutes later), each
 * append growing the file, and a create's SQLite cost doubled from 20-24 to 42-54 us, mostly in the kernel
 * (bench/results/http.md I). So once a checkpoint finds more than `restartFrames` in the WAL, a second one runs
 * with the process's writes held off (`holdWrites`): it copies only what came in meanwhile, and the next commit
 * starts the WAL again, over the same file blocks. The event loop is never blocked: writes wait in their queue
 * (the WriteBatcher, Kysely's connection) for the few milliseconds of the copy, and at most HOLD_LIMIT_MS.
 */
export class CheckpointThread {
  private readonly worker: Worker;
  private readonly timer: NodeJS.Timeout;
  private readonly fallback: () => void;
  private readonly onError: (message: string) => void;
  private readonly fallbackWalBytes: number;
  private readonly holdWrites: ((work: () => Promise<void>) => Promise<void>) | null;
  private readonly restartFrames: number;
  private inFlight = false;
  private alive = true;
  /** The answer the one checkpoint in flight waits for. */
  private answer: ((reply: Reply) => void) | null = null;

  constructor(
    private readonly path: string,
    opts: CheckpointThreadOptions,
  ) {
    this.fallback = opts.fallback;
    this.onError = opts.onError ?? (() => undefined);
    this.fallbackWalBytes = opts.fallbackWalBytes ?? FALLBACK_WAL_BYTES;
    this.holdWrites = opts.holdWrites ?? null;
    this.restartFrames = opts.restartFrames ?? RESTART_FRAMES;
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    this.worker = new Worker(THREAD_CODE, { eval: true, workerData: { path, driver } });
    this.worker.unref();
    this.worker.on('message', (reply: Reply) => {
      if (!reply.ok && reply.error) this.onError(reply.error);
      this.settle(reply);
    });
    this.worker.on('error', (err) => {
      this.alive = false;
      this.onError(String(err));
      this.settle({ ok: false });
    });
    this.worker.on('exit', () => {
      this.alive = false;
      this.settle({ ok: false });
    });
    this.timer = setInterval(() => this.tick(), opts.intervalMs);
    this.timer.unref();
  }

  private settle(reply: Reply): void {
    const answer = this.answer;
    this.answer = null;
    answer?.(reply);
  }

  /** One PASSIVE checkpoint on the thread; a dead thread answers not ok. */
  private ask(): Promise<Reply> {
    if (!this.alive) return Promise.resolve({ ok: false });
    return new Promise<Reply>((resolve) => {
      this.answer = resolve;
      this.worker.postMessage('checkpoint');
    });
  }

  private tick(): void {
    if (this.alive && !this.inFlight) {
      this.inFlight = true;
      void this.checkpoint().finally(() => {
        this.inFlight = false;
      });
      return;
    }
    if (walBytes(this.path) > this.fallbackWalBytes) this.fallback();
  }

  private async checkpoint(): Promise<void> {
    const first = await this.ask();
    if (!first.ok || !this.holdWrites || (first.log ?? 0) < this.restartFrames) return;
    const second = this.ask();
    await this.holdWrites(async () => {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([second, new Promise<void>((resolve) => (timer = setTimeout(resolve, HOLD_LIMIT_MS)))]);
      clearTimeout(timer);
    });
    await second;
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
