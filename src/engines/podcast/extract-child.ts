/**
 * Entry of one source-extraction child process (one per source, started by extractInWorker): takes the
 * file over IPC, extracts it and sends back the result, or the failure as data (errors lose their class
 * crossing processes), then exits.
 */
import { TaskFailure } from '../../domain/errors.js';
import { extractSource, type ExtractOptions, type SourceFile } from './sources.js';

export type ExtractReply = { ok: true; value: Awaited<ReturnType<typeof extractSource>> } | { ok: false; failure: string } | { ok: false; error: string };

process.once('message', async ({ file, opts }: { file: SourceFile; opts: ExtractOptions }) => {
  let reply: ExtractReply;
  try {
    reply = { ok: true, value: await extractSource(file, opts) };
  } catch (err) {
    reply = err instanceof TaskFailure ? { ok: false, failure: err.message } : { ok: false, error: err instanceof Error ? err.message : String(err) };
  }
  process.send!(reply, () => process.exit(0));
});
