/**
 * Entry of one source-extraction child process (one per source, started by extract-worker.ts): takes the
 * request over IPC, extracts and sends back the result, or the failure as data (errors lose their class
 * crossing processes), then exits. A video page's caption tracks are fetched by the parent (its fetcher
 * holds the SSRF guard): the child asks for each one and reads the file the parent wrote.
 */
import { readFile } from 'node:fs/promises';
import { TaskFailure } from '../../domain/errors.js';
import { extractSource, extractVideoCaptions, type ExtractedSource, type ExtractOptions, type SourceFile } from './sources.js';

export type ExtractRequest =
  | { op: 'source'; file: SourceFile; opts: ExtractOptions }
  | { op: 'video'; htmlPath: string; pageUrl: string; opts: ExtractOptions };
export type ExtractReply = { ok: true; value: ExtractedSource | null } | { ok: false; failure: string } | { ok: false; error: string };
/** Child -> parent: fetch this caption track. Parent -> child: where it was written, or why not. */
export type FetchAsk = { fetch: { id: number; url: string } };
export type FetchAnswer = { fetched: { id: number; path: string } | { id: number; error: string } };

/** The child's whole life: one request, the caption fetches it asks for, one reply. */
function serve(): void {
  const pending = new Map<number, { resolve: (path: string) => void; reject: (err: Error) => void }>();
  let nextId = 0;
  const fetchText = (url: string): Promise<string> => {
    const id = nextId++;
    const asked = new Promise<string>((resolve, reject) => pending.set(id, { resolve, reject }));
    process.send!({ fetch: { id, url } } satisfies FetchAsk);
    return asked.then((path) => readFile(path, 'utf8'));
  };
  const run = (req: ExtractRequest): Promise<ExtractedSource | null> =>
    req.op === 'source' ? extractSource(req.file, req.opts) : extractVideoCaptions(req.htmlPath, req.pageUrl, fetchText, req.opts);

  process.on('message', async (msg: ExtractRequest | FetchAnswer) => {
    if ('fetched' in msg) {
      const waiter = pending.get(msg.fetched.id);
      pending.delete(msg.fetched.id);
      if ('path' in msg.fetched) waiter?.resolve(msg.fetched.path);
      else waiter?.reject(new Error(msg.fetched.error));
      return;
    }
    let reply: ExtractReply;
    try {
      reply = { ok: true, value: await run(msg) };
    } catch (err) {
      reply = err instanceof TaskFailure ? { ok: false, failure: err.message } : { ok: false, error: err instanceof Error ? err.message : String(err) };
    }
    process.send!(reply, () => process.exit(0));
  });
}

serve();
