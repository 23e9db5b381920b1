import cliProgress from 'cli-progress';
import type { Command } from 'commander';
import { MODEL_CATALOG, findModel, type ModelEntry, type ModelKind } from '../models/catalog.js';
import { listModels, pullModel, type PullProgress, type PullResult } from '../models/download.js';
import { ImportRefused, importModel, removeModel } from '../models/manage.js';
import { CliError } from './admin.js';

export interface ModelCommandDeps {
  modelsDir: string;
  /** Writes the command's one JSON result object to stdout. */
  print: (obj: unknown) => void;
  /** Progress lines (human-readable) go here; stderr by default so stdout stays one JSON object. */
  progress?: (line: string) => void;
  fetchImpl?: typeof fetch;
  catalog?: readonly ModelEntry[];
  /** MODELS_BASE_URL: downloads come from this mirror. */
  baseUrl?: string;
  /** Draw a progress bar (stderr is a terminal) instead of progress lines. */
  progressBar?: boolean;
  /** Give a download up after this long without a byte (default PULL_STALL_MS; tests shorten it). */
  pullStallMs?: number;
}

/** As long as the server's own downloads wait for a byte (src/models/auto-pull.ts): a stalled mirror is given up. */
export const PULL_STALL_MS = 30_000;

const KINDS: readonly ModelKind[] = ['tts', 'separation', 'enhance', 'vad', 'asr', 'llm'];
const MiB = 1024 * 1024;

/** Throttled progress: one line per file per second, plus the line that completes the file. */
function progressReporter(write: (line: string) => void): (p: PullProgress) => void {
  let last = 0;
  let lastFile = '';
  return (p) => {
    const now = Date.now();
    const done = p.receivedBytes >= p.totalBytes;
    if (!done && p.file === lastFile && now - last < 1000) return;
    last = now;
    lastFile = p.file;
    const pct = p.totalBytes > 0 ? Math.floor((100 * p.receivedBytes) / p.totalBytes) : 0;
    write(
      `${p.model}/${p.file}: ${(p.receivedBytes / MiB).toFixed(1)}/${(p.totalBytes / MiB).toFixed(1)} MiB (${pct}%)\n`,
    );
  };
}

/** A cli-progress bar per file on stderr; stdout keeps its one JSON object. */
function progressBar(): { onProgress: (p: PullProgress) => void; log: (line: string) => void; stop: () => void } {
  const bars = new cliProgress.MultiBar(
    { stream: process.stderr, format: '{file} [{bar}] {percentage}% {got}/{size} MiB', hideCursor: true, clearOnComplete: false },
    cliProgress.Presets.shades_classic,
  );
  const byFile = new Map<string, cliProgress.SingleBar>();
  return {
    onProgress(p) {
      const key = `${p.model}/${p.file}`;
      let bar = byFile.get(key);
      const payload = { file: key, got: (p.receivedBytes / MiB).toFixed(1), size: (p.totalBytes / MiB).toFixed(1) };
      if (!bar) byFile.set(key, (bar = bars.create(p.totalBytes, p.receivedBytes, payload)));
      bar.update(p.receivedBytes, payload);
    },
    log: (line) => bars.log(line),
    stop: () => bars.stop(),
  };
}

function entryOrFail(catalog: readonly ModelEntry[], name: string): ModelEntry {
  const entry = findModel(name, catalog);
  if (!entry) throw new CliError(`unknown model: ${name} (see: soundry models list)`);
  return entry;
}

export function registerModelCommands(program: Command, deps: ModelCommandDeps): void {
  const catalog = deps.catalog ?? MODEL_CATALOG;
  const writeProgress = deps.progress ?? ((line: string) => void process.stderr.write(line));
  const models = program.command('models').description('Downloadable models (Piper voices, separation, enhancement, speech recognition, local language models)');

  models
    .command('list')
    .description('List catalog models: per file its URL, size and checksum; per model installed, missing or corrupt')
    .option('--kind <kind>', `only this kind (${KINDS.join(', ')})`)
    .option('--installed', 'only installed models')
    .action(async (opts: { kind?: string; installed?: boolean }) => {
      if (opts.kind !== undefined && !KINDS.includes(opts.kind as ModelKind)) {
        throw new CliError(`--kind must be one of ${KINDS.join(', ')}, got ${opts.kind}`);
      }
      const all = await listModels({ modelsDir: deps.modelsDir, catalog, ...(deps.baseUrl ? { baseUrl: deps.baseUrl } : {}) });
      const shown = all.filter((m) => (!opts.kind || m.kind === opts.kind) && (!opts.installed || m.installed));
      deps.print({ modelsDir: deps.modelsDir, models: shown });
    });

  models
    .command('pull')
    .description('Download a model (resumes interrupted downloads, verifies checksums)')
    .argument('[name]', 'model name from `models list`')
    .option('--all-tts', 'pull every TTS model in the catalog')
    .action(async (name: string | undefined, opts: { allTts?: boolean }) => {
      let entries: ModelEntry[];
      if (opts.allTts) {
        if (name) throw new CliError('give either a model name or --all-tts, not both');
        entries = catalog.filter((m) => m.kind === 'tts');
      } else {
        if (!name) throw new CliError('missing model name (see: soundry models list), or use --all-tts');
        entries = [entryOrFail(catalog, name)];
      }
      const bar = deps.progressBar ? progressBar() : null;
      const onProgress = bar ? bar.onProgress : progressReporter(writeProgress);
      const pulled: PullResult[] = [];
      // --all-tts goes on past a model that fails (found from outside: the first failure stopped it, and every voice
      // after it was left unpulled and unmentioned); each failure is listed and the command exits 1 at the end.
      const failed: Array<{ model: string; error: string }> = [];
      const stallMs = deps.pullStallMs ?? PULL_STALL_MS;
      let timer: NodeJS.Timeout | undefined;
      try {
        for (const entry of entries) {
          // A mirror that stops sending (or never answers) is given up after PULL_STALL_MS without a byte, as the
          // server's own downloads are: `models pull` used to wait for ever, silently. One watch per model, so a stall
          // fails that model only.
          const stalled = new AbortController();
          const watch = () => {
            clearTimeout(timer);
            timer = setTimeout(() => stalled.abort(new CliError(`download stalled: no data for ${stallMs / 1000} s; run pull again to resume`)), stallMs);
          };
          watch();
          try {
            pulled.push(
              await pullModel(entry, {
                modelsDir: deps.modelsDir,
                onProgress: (p) => {
                  watch();
                  onProgress(p);
                },
                signal: stalled.signal,
                ...(deps.fetchImpl ? { fetchImpl: deps.fetchImpl } : {}),
                ...(deps.baseUrl ? { baseUrl: deps.baseUrl } : {}),
              }),
            );
          } catch (err) {
            if (!opts.allTts) throw err;
            const error = err instanceof Error ? err.message : String(err);
            failed.push({ model: entry.name, error });
            (bar ? bar.log : writeProgress)(`${entry.name}: failed: ${error}\n`);
          } finally {
            clearTimeout(timer);
          }
        }
      } finally {
        bar?.stop();
      }
      if (!opts.allTts) return deps.print(pulled[0]);
      deps.print({ pulled, failed });
      if (failed.length) {
        throw new CliError(`${failed.length} of ${entries.length} TTS models could not be pulled: ${failed.map((f) => f.model).join(', ')}; their errors are in the output's failed list`);
      }
    });

  models
    .command('add')
    .description('Install a model from local files (an offline copy), after checking their sizes and checksums')
    .argument('<name>', 'model name from `models list`')
    .argument('<files...>', "the model's files (matched by file name)")
    .action(async (name: string, files: string[]) => {
      const entry = entryOrFail(catalog, name);
      try {
        deps.print(await importModel(entry, files, deps.modelsDir));
      } catch (err) {
        if (err instanceof ImportRefused) throw new CliError(`not installed: ${err.message}`);
        throw err;
      }
    });

  models
    .command('remove')
    .description("Delete a model's folder from MODELS_DIR")
    .argument('<name>', 'model name from `models list`')
    .action(async (name: string) => {
      deps.print(await removeModel(entryOrFail(catalog, name), deps.modelsDir));
    });
}
