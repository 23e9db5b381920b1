import { basename, extname, join } from 'node:path';
import { readFile, stat } from 'node:fs/promises';
import { InvalidArgumentError, type Command } from 'commander';
import cliProgress from 'cli-progress';
import { ERRORS } from '../domain/errors.js';
import { ENHANCE_FLAGS, MODEL_TYPES, PODCAST_LANGUAGES, TTS_LANGUAGES, isModelType, isPodcastLanguage, type EnhanceFlag, type TtsLanguage } from '../domain/vocabulary.js';
import { Soundry, SoundryError, type CreatedTask, type OnProgress, type ProgressEvent, type RunOptions } from '../sdk/index.js';

/**
 * The user-facing commands (tts, separate, enhance, podcast): thin wrappers over the SDK, talking to a server
 * at SOUNDRY_URL with SOUNDRY_API_KEY. Results are one JSON line on stdout (scripts read it); progress goes to
 * stderr, as bars only when stderr is a terminal. Failures exit with CLIENT_EXIT codes; 130 is a Ctrl-C, as a shell
 * reports a process that SIGINT ended.
 */
export const CLIENT_EXIT = { ok: 0, unexpected: 1, input: 2, refused: 3, taskFailed: 4, unreachable: 5, interrupted: 130 } as const;

export interface ClientDeps {
  url: string;
  apiKey: string | undefined;
  /** SOUNDRY_TIMEOUT_SECONDS: the most a request may go without a byte from the server; 0: no limit. */
  timeoutSeconds: number;
  print: (obj: unknown) => void;
  stderr: NodeJS.WriteStream;
}

/** A progress reporter: one bar per phase on a terminal, nothing otherwise (logs stay clean). */
function progressReporter(stderr: NodeJS.WriteStream): { onProgress: OnProgress; stop(): void } {
  if (!stderr.isTTY) return { onProgress: () => undefined, stop: () => undefined };
  let bar: cliProgress.SingleBar | null = null;
  let phase: ProgressEvent['phase'] | null = null;
  const stop = () => {
    bar?.stop();
    bar = null;
  };
  return {
    stop,
    onProgress(e) {
      const total = e.phase === 'wait' ? 100 : e.total ?? 0;
      const value = e.phase === 'wait' ? Math.round(e.done * 100) : e.done;
      if (phase !== e.phase || !bar) {
        stop();
        phase = e.phase;
        const unit = e.phase === 'wait' ? '%' : ' bytes';
        bar = new cliProgress.SingleBar(
          { stream: stderr, format: `${e.phase.padEnd(8)} [{bar}] {value}/{total}${unit} {status}`, hideCursor: true, clearOnComplete: false },
          cliProgress.Presets.shades_classic,
        );
        bar.start(total || 1, value, { status: e.status ?? '' });
      }
      if (total) bar.setTotal(total);
      bar.update(value, { status: e.status ?? '' });
    },
  };
}

/** What to tell the user beyond the server's own message, by the spec's code. */
const HINTS: Record<number, string> = {
  [ERRORS.INVALID_API_KEY.code]: 'check SOUNDRY_API_KEY. Keys live in the server\'s database: a key made by `soundry keys create` with another DATA_DIR (or DATABASE_URL) than the server\'s is unknown to it',
  [ERRORS.INSUFFICIENT_CREDITS.code]: 'the account is out of credits: an admin adds some with `soundry credits add ACCOUNT N`',
  [ERRORS.ACCOUNT_SUSPENDED.code]: 'the account is suspended (`soundry accounts resume ACCOUNT`)',
  [ERRORS.KEY_NOT_ENABLED.code]: 'the key is disabled (`soundry keys enable KEY`)',
};

/**
 * Names a task that exists on the server although the command failed: a server gone mid-wait, or a Ctrl-C, used to
 * end the command without its id, and the user could not find a task they may have been charged for (found from outside).
 */
function aboutCreatedTask(task: CreatedTask, err: SoundryError, message: string): string {
  const named = `task ${task.id} (${task.kind}) was created`;
  const find = `find it later with \`soundry tasks show ${task.id}\` on the server's database, or query ${task.id} through the API`;
  // Once the task is done (its result being downloaded), it no longer runs: a Ctrl-C or a silent server during the
  // download was said as "keeps running" or "stopped answering while waiting for it" (found from outside).
  if (task.finished) {
    const done = `${named} and had finished on the server, where it may be charged; its result can be fetched again`;
    return err.kind === 'cancelled' ? `${message}; ${done}: ${find}` : `${done}, but the command failed: ${message}; ${find}`;
  }
  if (err.kind === 'cancelled') return `${message}; ${named} and keeps running on the server, where it may be charged: ${find}`;
  const silent = err.kind === 'network' || (err.kind === 'timeout' && err.silentSeconds !== null);
  const what = silent ? 'the server stopped answering while waiting for it' : err.kind === 'timeout' ? 'the client gave up waiting for it' : 'then the command failed';
  return `${named}; ${what}: ${message}; ${find}`;
}

/** Turns an SDK error into the line the user reads and the exit code a script tests. */
export function describeClientError(err: SoundryError): { message: string; exitCode: number } {
  const hint = err.code !== null ? HINTS[err.code] : undefined;
  let message = hint ? `${err.message}; ${hint}` : err.message;
  if (err.silentSeconds !== null) {
    message += `; the limit is SOUNDRY_TIMEOUT_SECONDS=${err.silentSeconds} (seconds without a byte from the server; 0: no limit): raise it if the server is slow rather than gone`;
  }
  // A failed task's message names it already, and it is over: nothing runs on that the user must find.
  if (err.task && err.kind !== 'task_failed') message = aboutCreatedTask(err.task, err, message);
  else if (err.kind === 'cancelled') message = `${message}; no task id had been received from the server`;
  const exitCode = {
    api: CLIENT_EXIT.refused, task_failed: CLIENT_EXIT.taskFailed, network: CLIENT_EXIT.unreachable, timeout: CLIENT_EXIT.unreachable,
    cancelled: CLIENT_EXIT.interrupted, input: CLIENT_EXIT.input,
  }[err.kind];
  return { message, exitCode };
}

const intOption = (name: string, min: number, max: number) => (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < min || n > max) throw new InvalidArgumentError(`${name} must be a whole number from ${min} to ${max}`);
  return n;
};

const isTtsLanguage = (v: string): v is TtsLanguage => (TTS_LANGUAGES as readonly string[]).includes(v);
const flagOption = (flag: EnhanceFlag) => `--${flag.replace(/_/g, '-')}`;
const camel = (flag: EnhanceFlag) => flag.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

/**
 * Checked before the task is created (and charged): an output path that cannot be written was found only once the
 * result was paid for, with a bare errno message and no way to get the result (found from outside).
 */
async function checkOutput(path: string, want: 'file' | 'folder'): Promise<void> {
  if (!path.trim()) throw new SoundryError('The output path is empty: give one with -o', 'input');
  const info = await stat(path).catch(() => null);
  if (want === 'file' && info?.isDirectory()) throw new SoundryError(`The output ${path} is a folder: give a file name with -o (e.g. ${join(path, 'out.mp3')})`, 'input');
  if (want === 'folder' && info && !info.isDirectory()) throw new SoundryError(`The output ${path} is a file: give a folder for the stems with -o`, 'input');
}

export function registerClientCommands(program: Command, deps: ClientDeps): void {
  /**
   * Runs one client call with a progress reporter, so every command handles its bars the same way, and with Ctrl-C
   * caught: it aborts the request in flight, and the error that unwinds (a partial download removed on the way) names
   * the task already created (describeClientError), exit 130. Should anything not unwind, the process ends anyway
   * after a moment, or at a second Ctrl-C, saying the same.
   */
  const withClient = async <T>(work: (client: Soundry, run: Pick<RunOptions, 'onProgress' | 'signal' | 'onCreated'>) => Promise<T>): Promise<T> => {
    const client = new Soundry({ baseUrl: deps.url, apiKey: deps.apiKey ?? '', timeoutSeconds: deps.timeoutSeconds });
    const progress = progressReporter(deps.stderr);
    const interrupt = new AbortController();
    let created: CreatedTask | null = null;
    const leave = () => {
      progress.stop();
      const { message, exitCode } = describeClientError(new SoundryError('Interrupted (Ctrl-C)', 'cancelled', null, null, { task: created }));
      deps.stderr.write(`soundry: ${message}\n`);
      process.exit(exitCode);
    };
    let fallback: NodeJS.Timeout | undefined;
    const onSigint = () => {
      if (interrupt.signal.aborted) leave();
      interrupt.abort(new SoundryError('Interrupted (Ctrl-C)', 'cancelled'));
      fallback = setTimeout(leave, 3000).unref();
    };
    process.on('SIGINT', onSigint);
    try {
      return await work(client, { onProgress: progress.onProgress, signal: interrupt.signal, onCreated: (task) => (created = task) });
    } finally {
      clearTimeout(fallback);
      process.off('SIGINT', onSigint);
      progress.stop();
    }
  };

  program
    .command('tts')
    .description('text to speech on the server at SOUNDRY_URL: writes the audio file')
    .argument('<text>', 'the text to speak')
    .option('-o, --output <file>', 'output file (.mp3 or .wav)', 'speech.mp3')
    .option('--voice <id>', 'voice id (default: an installed neural voice of --language, else its first voice)', intOption('--voice', 1, Number.MAX_SAFE_INTEGER))
    .option('--language <key>', 'language key (en, de, ja ...)', 'en')
    .option('--emotion <id>', 'emotion id 0-8 (0 auto)', intOption('--emotion', 0, 8), 0)
    .option('--speed <x>', 'speed multiplier (0.5, 1, 2)', (v) => Number(v), 1)
    .action(async (text: string, o: { output: string; voice?: number; language: string; emotion: number; speed: number }) => {
      await checkOutput(o.output, 'file');
      const result = await withClient(async (client, run) => {
        // The default voice: an installed neural one when the server has it (never one it would first download).
        const voices = o.voice === undefined ? await client.tts.voices({ language: o.language }, run) : [];
        const voiceId = o.voice ?? (voices.find((v) => v.neural && v.downloaded !== false) ?? voices[0])?.id;
        if (voiceId === undefined) throw new SoundryError(`The server has no voice for language ${o.language}`, 'input');
        const format = extname(o.output).toLowerCase() === '.wav' ? 'wav' : 'mp3';
        const language = o.language === 'all' || isTtsLanguage(o.language) ? o.language : null;
        if (!language) throw new SoundryError(`--language must be all or one of ${TTS_LANGUAGES.join(', ')}`, 'input');
        return client.tts.run({ voice_id: voiceId, emotion: o.emotion, speed: o.speed, language, text, format }, o.output, run);
      });
      // engine_note: the neural voice asked for could not be had and a built-in voice spoke (docs/api.md).
      const { engine, engine_note: engineNote } = result.data;
      deps.print({ file: result.file, voice: result.data.voice, engine, ...(engineNote ? { engine_note: engineNote } : {}), duration: result.data.duration, credits: result.data.credits });
    });

  program
    .command('separate')
    .description('stem separation: uploads the file (or passes an http(s) URL), writes one file per stem')
    .argument('<input>', 'audio or video file, or an http(s) URL')
    .option('--model <type>', `model_type (${MODEL_TYPES.join(', ')})`, (v) => {
      const n = Number(v);
      if (!isModelType(n)) throw new InvalidArgumentError(`--model must be one of ${MODEL_TYPES.join(', ')}`);
      return n;
    }, 501)
    .option('-o, --output <dir>', 'folder for the stems', 'stems')
    .option('--format <fmt>', 'mp3, wav or flac', 'mp3')
    .action(async (input: string, o: { model: (typeof MODEL_TYPES)[number]; output: string; format: string }) => {
      const format = o.format === 'mp3' || o.format === 'wav' || o.format === 'flac' ? o.format : null;
      if (!format) throw new SoundryError('--format must be mp3, wav or flac', 'input');
      await checkOutput(o.output, 'folder');
      const result = await withClient((client, run) => client.separation.run(input, { ...run, modelType: o.model, outputDir: o.output, format }));
      // Why the built-in engine ran, and which stems it doubted: a script reading the output should see both.
      const { engine_note: engineNote, stem_notes: stemNotes } = result.data;
      deps.print({ files: result.files, engine: result.data.engine, ...(engineNote ? { engine_note: engineNote } : {}), ...(stemNotes ? { stem_notes: stemNotes } : {}), credits: result.data.credits });
    });

  const enhance = program
    .command('enhance')
    .description('audio enhancement: uploads the file (or passes an http(s) URL), writes the enhanced file; no flag = smart enhancement (autoid)')
    .argument('<input>', 'audio file, or an http(s) URL')
    .option('-o, --output <file>', 'output file (default: <input>.enhanced.<ext>)');
  for (const flag of ENHANCE_FLAGS) enhance.option(flagOption(flag), `enhance_type.${flag}`);
  enhance.action(async (input: string, o: Record<string, string | boolean | undefined>) => {
    const flags = ENHANCE_FLAGS.filter((f) => o[camel(f)] === true);
    // Without -o, the extension is the result's, not the input's: the server answers MP3 for an OGG, an M4A or a file
    // without extension (WAV and FLAC stay so), and `x.ogg` gave `x.enhanced.ogg` holding MP3 (found from outside).
    const stem = basename(input.split('?')[0] ?? input, extname(input.split('?')[0] ?? input));
    const output = typeof o.output === 'string' ? o.output : (extension: string) => `${stem}.enhanced.${extension}`;
    await checkOutput(typeof output === 'string' ? output : output('mp3'), 'file');
    const result = await withClient((client, run) => client.enhance.run(input, { ...run, flags, output }));
    // reasons: why each stage ran or did not, and why a built-in stage stood in for a neural one (docs/api.md).
    const { reasons } = result.data;
    deps.print({ file: result.file, stages: result.data.stages, engine: result.data.engine, ...(reasons && Object.keys(reasons).length ? { reasons } : {}), credits: result.data.credits });
  });

  program
    .command('podcast')
    .description('podcast in both steps (script, then audio) from a web page, a file or pasted text')
    .argument('[source]', 'http(s) URL of a page or video, or a local document/audio file')
    .option('--text <text>', 'pasted text instead of a source')
    .option('--text-file <file>', 'read the pasted text from this file')
    .option('-o, --output <file>', 'the episode (MP3)', 'episode.mp3')
    .option('--style <n>', 'style 1-9 (1 Educational, 2 Interview ...)', intOption('--style', 1, 9), 1)
    .option('--duration <n>', 'duration level 1-7 (2: 1-3 minutes)', intOption('--duration', 1, 7), 2)
    .option('--language <key>', `language (${PODCAST_LANGUAGES.join(', ')})`)
    .option('--video', 'the URL is a video-sharing link (source_type 2)')
    .action(async (source: string | undefined, o: { text?: string; textFile?: string; output: string; style: number; duration: number; language?: string; video?: boolean }) => {
      if (o.language !== undefined && !isPodcastLanguage(o.language)) throw new SoundryError(`--language must be one of ${PODCAST_LANGUAGES.join(', ')}`, 'input');
      let text = o.text;
      if (o.textFile) {
        try {
          text = await readFile(o.textFile, 'utf8');
        } catch {
          throw new SoundryError(`No such file: ${o.textFile}`, 'input');
        }
      }
      if (!source && !text) throw new SoundryError('Give a source (URL or file), --text or --text-file', 'input');
      const language = o.language !== undefined && isPodcastLanguage(o.language) ? o.language : undefined;
      const opts = { output: o.output, style: o.style, duration: o.duration, ...(language ? { language } : {}) };
      await checkOutput(o.output, 'file');
      const result = await withClient((client, run) => {
        const from = text !== undefined ? { text } : /^https?:\/\//i.test(source!) ? { url: source!, sourceType: o.video ? (2 as const) : (1 as const) } : { file: source! };
        return client.podcast.run(from, { ...opts, ...run });
      });
      // Why the built-in generator wrote the script, or a built-in voice spoke for a host (docs/api.md), as the other commands say it.
      const notes = [result.script.engine_note, result.episode.engine_note].filter((n): n is string => typeof n === 'string' && n.length > 0);
      deps.print({
        file: result.file, title: result.episode.title, script_id: result.script.global_id, audio_id: result.episode.global_id,
        script_engine: result.script.engine, ...(notes.length ? { engine_note: notes.join(' ') } : {}), credits: result.episode.credits,
      });
    });
}
