/**
 * Source extraction off the API's event loop: each source is read in a child process of its own with a cap
 * on its heap and a wall-clock limit, killed when either is passed, so one hostile document (a decompression
 * bomb, a PDF declaring 200,000 pages) fails its own task and nothing else. A process, not a worker thread:
 * a worker's heap limit does not hold for every allocation (a large string past the limit aborts the whole
 * process, measured with Node 20), a child's crash is its own.
 */
import { fork } from 'node:child_process';
import { stat } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { TaskFailure } from '../../domain/errors.js';
import type { ExtractedSource, ExtractOptions, SourceFile } from './sources.js';
import type { ExtractReply, ExtractRequest, FetchAnswer, FetchAsk } from './extract-child.js';

export interface ExtractLimits {
  /** Wall-clock limit of one extraction, in seconds (SOURCE_EXTRACT_MAX_SECONDS). */
  maxSeconds: number;
  /** Heap (V8 old generation) of the child, in MB (SOURCE_EXTRACT_MEMORY_MB). */
  memoryMb: number;
  /** Largest file read, in MB (SOURCE_MAX_MB): checked before the child starts. */
  maxMb: number;
}

export const DEFAULT_EXTRACT_LIMITS: ExtractLimits = { maxSeconds: 120, memoryMb: 512, maxMb: 100 };

/**
 * A source too large to read is refused before any reading: the readers take the whole file in memory, and a
 * file's bytes (a Buffer) live outside the heap the cap bounds, so a 1.9 GB text file took 1.9 GB in the child,
 * and one over 512 MB failed as an internal error (past V8's longest string) on each of three attempts.
 */
async function refuseOversized(path: string, limits: ExtractLimits): Promise<void> {
  const { size } = await stat(path);
  if (size > limits.maxMb * 1024 * 1024) {
    throw new TaskFailure(`The source is ${Math.ceil(size / (1024 * 1024))} MB: pages, documents, feeds and text are read up to ${limits.maxMb} MB (SOURCE_MAX_MB)`);
  }
}

export const extractTimeMessage = (s: number) =>
  `Reading the source took longer than ${s} s (the limit for one source): it may be far too large or crafted to stall the reader`;
export const extractMemoryMessage = (mb: number) =>
  `Reading the source needed more than ${mb} MB of memory (the limit for one source): it may be a decompression bomb or far too large`;

export async function extractInWorker(file: SourceFile, opts: ExtractOptions, limits: ExtractLimits, signal?: AbortSignal): Promise<ExtractedSource> {
  await refuseOversized(file.path, limits);
  const value = await runChild({ op: 'source', file, opts }, limits, signal);
  if (!value) throw new Error('Source extraction answered nothing');
  return value;
}

/**
 * A video page's transcript (see extractVideoCaptions), read in the child like any source: the page and
 * every caption document are parsed there; the tracks are fetched here by `fetchToFile`, which holds the
 * SSRF guard, and handed over as files. Null when the page has no usable track.
 */
export async function videoCaptionsInWorker(
  htmlPath: string,
  pageUrl: string,
  fetchToFile: (url: string) => Promise<string>,
  opts: ExtractOptions,
  limits: ExtractLimits,
  signal?: AbortSignal,
): Promise<ExtractedSource | null> {
  await refuseOversized(htmlPath, limits);
  return runChild({ op: 'video', htmlPath, pageUrl, opts }, limits, signal, fetchToFile);
}

function runChild(
  request: ExtractRequest,
  limits: ExtractLimits,
  signal: AbortSignal | undefined,
  fetchToFile?: (url: string) => Promise<string>,
): Promise<ExtractedSource | null> {
  const runningFromSource = import.meta.url.endsWith('.ts');
  const entry = fileURLToPath(new URL(runningFromSource ? './extract-child.ts' : './extract-child.js', import.meta.url));
  // Under tsx (npm start) or vitest the sources are .ts: the child needs the tsx loader too.
  const inherited = process.execArgv.filter((a) => !a.startsWith('--max-old-space-size'));
  const loader = runningFromSource && !inherited.some((a) => a.includes('tsx')) ? ['--import', 'tsx'] : [];
  return new Promise<ExtractedSource | null>((resolve, reject) => {
    signal?.throwIfAborted();
    const child = fork(entry, [], {
      execArgv: [...inherited, ...loader, `--max-old-space-size=${limits.memoryMb}`],
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      serialization: 'advanced',
    });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => {
      if (stderr.length < 8192) stderr += d.toString('utf8');
    });
    let settled = false;
    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      fn();
    };
    // One limit for the whole source, caption fetches included: a stalled track cannot outlive it.
    const timer = setTimeout(() => finish(() => reject(new TaskFailure(extractTimeMessage(limits.maxSeconds)))), limits.maxSeconds * 1000);
    const onAbort = () => finish(() => reject(signal!.reason));
    signal?.addEventListener('abort', onAbort, { once: true });
    const answer = (a: FetchAnswer) => {
      if (!settled && child.connected) child.send(a);
    };
    child.on('message', (msg: ExtractReply | FetchAsk) => {
      if ('fetch' in msg) {
        const { id, url } = msg.fetch;
        if (!fetchToFile) return answer({ fetched: { id, error: 'no fetcher for this request' } });
        fetchToFile(url).then(
          (path) => answer({ fetched: { id, path } }),
          (err: unknown) => answer({ fetched: { id, error: err instanceof Error ? err.message : String(err) } }),
        );
        return;
      }
      finish(() => {
        if (msg.ok) resolve(msg.value);
        else if ('failure' in msg) reject(new TaskFailure(msg.failure));
        // The reader failed on this file: a retry would read the same bytes the same way (three times, before).
        else reject(new TaskFailure(`The source could not be read: ${msg.error}`));
      });
    });
    child.on('error', (err) => finish(() => reject(err)));
    child.on('exit', (code, sig) =>
      // stderr may still be arriving when 'exit' fires: 'close' waits for it.
      child.once('close', () =>
        finish(() => {
          if (/heap out of memory|Reached heap limit/i.test(stderr) || sig === 'SIGABRT' || code === 134) reject(new TaskFailure(extractMemoryMessage(limits.memoryMb)));
          else reject(new Error(`The source extraction process exited (${sig ?? `code ${code}`}) without an answer`));
        }),
      ),
    );
    child.send(request);
  });
}
