import type { Logger } from 'pino';
import { errorSummary } from '../domain/errors.js';

/**
 * Runs `op` until it passes, trying again while its failure is a store being unreachable (a database restarting,
 * an object store answering 503 or cutting connections): after 0.5, 1, 2, 4, then every 5 s, until `deadline`
 * (ms since the epoch) or until `abandon()` says to stop (a shutdown, a lost lease). Any other failure, or one past
 * the deadline, is thrown at once. Worker side: a task's finished work is kept through a short outage instead of
 * spending its attempt (with three attempts and their backoff, a few seconds of outage used to fail the task).
 */
export async function throughOutage<T>(
  op: () => Promise<T>,
  opts: { unavailable: (err: unknown) => boolean; deadline: number; abandon: () => boolean; log: Logger; what: string; signal?: AbortSignal },
): Promise<T> {
  for (let waitMs = 500; ; waitMs = Math.min(2 * waitMs, 5000)) {
    try {
      return await op();
    } catch (err) {
      if (!opts.unavailable(err) || opts.abandon() || Date.now() + waitMs > opts.deadline) throw err;
      opts.log.warn({ err: errorSummary(err), retryInMs: waitMs }, `${opts.what}: the store cannot be reached, trying again`);
      await pause(waitMs, opts.signal);
    }
  }
}

function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
