/**
 * MODELS_AUTO_PULL for a task that needs a model on first use: download with the task's
 * progress, verify (pullModel checks size and checksum while streaming), give up on a stalled network, and remember a
 * failure for a while so that a site without network does not make every task wait on the same download. It is the
 * one provisioning path of every kind that pulls on first use (separation, enhancement, transcription, and TTS
 * voices through src/kinds/tts/voice-models.ts).
 */
import type { ModelEntry } from './catalog.js';
import { pullModel } from './download.js';
import { DownloadBusyError } from './download-lock.js';

export interface AutoPullOptions {
  modelsDir: string;
  /** MODELS_BASE_URL. */
  baseUrl?: string;
  signal: AbortSignal;
  /** 0..1 of the download (all files of all entries by bytes). */
  onProgress(fraction: number): void;
  /** No bytes for this long gives the download up (default 30 s). */
  stallMs?: number;
  /** Tests only: a fetch that serves the catalog without a network. */
  fetchImpl?: typeof fetch;
}

/** How often a task waiting on another task's download of the same file looks again. */
const BUSY_POLL_MS = 250;

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const done = () => {
      signal.removeEventListener('abort', aborted);
      resolve();
    };
    const t = setTimeout(done, ms);
    const aborted = () => {
      clearTimeout(t);
      reject(signal.reason);
    };
    signal.addEventListener('abort', aborted, { once: true });
  });
}

/** After a failed download the same model is not tried again for this long. */
export const RETRY_PULL_AFTER_MS = 10 * 60_000;

/** One per long-lived owner (a handler), never module state: failures remembered per model name. */
export class AutoPuller {
  private readonly failed = new Map<string, { at: number; reason: string }>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Undefined when every entry is now installed (verified); else why not, as one readable sentence. */
  async pull(entries: readonly ModelEntry[], opts: AutoPullOptions): Promise<string | undefined> {
    for (const entry of entries) {
      const f = this.failed.get(entry.name);
      if (f && this.now() - f.at < RETRY_PULL_AFTER_MS) return `the download of ${entry.name} failed recently (${f.reason}); not retried before ${RETRY_PULL_AFTER_MS / 60_000} minutes`;
    }
    const total = entries.reduce((n, e) => n + e.files.reduce((m, f) => m + f.sizeBytes, 0), 0);
    const got = new Map<string, number>();
    const stallMs = opts.stallMs ?? 30_000;
    for (const entry of entries) {
      const stalled = new AbortController();
      const stall = () => setTimeout(() => stalled.abort(new Error(`no data for ${stallMs / 1000} s`)), stallMs);
      let timer = stall();
      try {
        for (;;) {
          try {
            await pullModel(entry, {
              modelsDir: opts.modelsDir,
              signal: AbortSignal.any([opts.signal, stalled.signal]),
              ...(opts.baseUrl ? { baseUrl: opts.baseUrl } : {}),
              ...(opts.fetchImpl ? { fetchImpl: opts.fetchImpl } : {}),
              onProgress: (p) => {
                clearTimeout(timer);
                timer = stall();
                got.set(`${p.model}/${p.file}`, p.receivedBytes);
                const sum = [...got.values()].reduce((a, b) => a + b, 0);
                opts.onProgress(Math.min(1, total > 0 ? sum / total : 1));
              },
            });
            break;
          } catch (err) {
            if (!(err instanceof DownloadBusyError)) throw err;
            // Another task (thread or process) is downloading this file: wait for it rather than give up on the
            // model, then look again (a verified file is skipped; a lock its dead holder left goes stale and is taken
            // over). The other download has its own stall limit, so this wait is not counted as ours stalling.
            clearTimeout(timer);
            await sleep(BUSY_POLL_MS, opts.signal);
            timer = stall();
          }
        }
      } catch (err) {
        opts.signal.throwIfAborted();
        const reason = stalled.signal.aborted ? `download stalled: ${(stalled.signal.reason as Error).message}` : (err as Error).message;
        this.failed.set(entry.name, { at: this.now(), reason });
        return `${entry.name} could not be installed: ${reason}`;
      } finally {
        clearTimeout(timer);
      }
      this.failed.delete(entry.name);
    }
    return undefined;
  }
}
