import { join } from 'node:path';
import { TaskFailure } from '../../domain/errors.js';
import { hostNames } from '../../domain/podcast-hosts.js';
import type { VoiceLibrary, VoiceRecord } from '../../ports/voices.js';
import { MODEL_CATALOG, type ModelEntry } from '../../models/catalog.js';
import { AutoPuller } from '../../models/auto-pull.js';

import { plainToText } from '../../engines/podcast/extract/plain.js';
import { detectLanguage, playlistRefusal, refusePlaylist, transcriptSource, type ExtractedSource } from '../../engines/podcast/sources.js';
import { DEFAULT_EXTRACT_LIMITS, extractInWorker, videoCaptionsInWorker, type ExtractLimits } from '../../engines/podcast/extract-worker.js';
import { findAsrModel } from '../../engines/asr/whisper.js';
import type { MediaTools } from '../../media/ffmpeg.js';
import { openAudioInput } from '../media-input.js';
import { sniffPlaylist, type SniffedType } from '../../media/sniff.js';
import { renderTranscript, type PodcastScript, type ScriptGenerator, type SpeakerInfo } from '../../engines/podcast/script.js';
import { DEFAULT_PODCAST_SCRIPT_MAX_CHARS, PODCAST_LIMITS as L, scriptCharacters } from '../../domain/podcast-limits.js';
import { isPodcastLanguage } from '../../domain/vocabulary.js';
import type { InputFetcher } from '../../jobs/input-fetcher.js';
import type { JobContext, JobOutcome, TaskHandler } from '../../jobs/handler.js';
import type { EngineThreads } from '../threads.js';
import { SAMPLE_RATE } from '../../engines/asr/features.js';
import { decodedFrames } from '../decoded-length.js';
import { asrLimitMessage, type AsrThreadInput } from './asr-thread.js';
import { PodcastScriptParams, type PodcastScriptResult } from './contract.js';
import type { GeneratedScript, LocalLlmScripts } from './local-llm.js';

const ROLES = 'ABCDEFGH';

function isMedia(sniffed: SniffedType): boolean {
  return sniffed.kind === 'audio' || sniffed.kind === 'video';
}

/** At most `max` UTF-16 units, an ellipsis marking the cut (never half a surrogate pair). */
function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = max - 1;
  if (/[\ud800-\udbff]/.test(text.charAt(end - 1))) end--;
  return `${text.slice(0, end)}…`;
}

/**
 * The script as the audio step accepts it back (docs/api.md, limits of the podcast steps): descriptive fields
 * are cut to their limits; lines are the episode itself, so a script whose lines exceed them (only a language
 * model could write one) fails instead of being handed out unrenderable.
 */
export function withinLimits(script: PodcastScript, scriptMaxChars: number): PodcastScript {
  const lines = script.podcast_script;
  const total = scriptCharacters(lines);
  const longest = lines.reduce((m, l) => Math.max(m, l.text.length), 0);
  if (lines.length > L.lines || longest > L.lineChars || total > scriptMaxChars) {
    throw new TaskFailure(
      `The generated script is larger than the audio step accepts (${lines.length} lines of at most ${L.lines}, ` +
        `the longest ${longest} characters of at most ${L.lineChars}, ${total} characters in all of at most ${scriptMaxChars})`,
    );
  }
  const title = cut(script.title, L.titleChars);
  return {
    ...script,
    title,
    processed_content: cut(script.processed_content, L.processedContentChars),
    train_data: cut(script.train_data, L.outlineChars),
    hightlights: script.hightlights.slice(0, L.highlights).map((h) => ({ ...h, highlight: cut(h.highlight, L.highlightChars) })),
    podcast_script_txt: title === script.title ? script.podcast_script_txt : renderTranscript({ title, podcast_script: lines }),
  };
}

/**
 * Two hosts by default: a woman and a man speaking the podcast's language, when both exist. An installed neural
 * voice comes before the built-in ones of its gender; a neural voice not downloaded yet comes last (a default never
 * starts a download the user did not ask for).
 */
export function defaultSpeakers(voices: VoiceRecord[], language: string): VoiceRecord[] {
  const rank = (v: VoiceRecord) => (!v.neural ? 1 : v.downloaded === false ? 2 : 0);
  // sort is stable: within a rank, the voice list's order.
  const own = voices.filter((v) => v.language === language).sort((a, b) => rank(a) - rank(b));
  const female = own.find((v) => v.gender === 2);
  const male = own.find((v) => v.gender === 1);
  const picked = [female, male].filter((v): v is VoiceRecord => Boolean(v));
  return picked.length >= 2 ? picked : own.slice(0, 2);
}

/** The model a first transcription downloads: whisper-tiny (41 MB) unless the site catalog has no such entry. */
function defaultAsrEntry(catalog: readonly ModelEntry[]): ModelEntry | undefined {
  const asr = catalog.filter((e) => e.kind === 'asr');
  return asr.find((e) => e.name === 'whisper-tiny') ?? asr[0];
}

/** Podcast step 1: fetch and read the source, then write the script with the configured generator. */
export class PodcastScriptHandler implements TaskHandler {
  readonly kind = 'podcast_script' as const;
  /** Remembers failed model downloads per handler, so a site without network does not retry on every task. */
  private readonly puller = new AutoPuller();

  constructor(
    private readonly deps: {
      input: InputFetcher;
      voices: VoiceLibrary;
      generator: ScriptGenerator;
      /** LLM_ENGINE auto (no LLM_BASE_URL) or llama: the local model writes scripts, `generator` is its fallback. */
      localLlm?: LocalLlmScripts;
      avatarUrl: (voiceId: number) => string;
      /** Speech recognition for audio/video sources; absent = such sources fail with a clear message. */
      /** catalog: the effective one (MODELS_CATALOG_FILE included); a model is used only when verified against it. */
      asr?: {
        threads: EngineThreads; media: MediaTools; modelsDir: string; catalog?: readonly ModelEntry[]; maxSeconds: number;
        /** MODELS_AUTO_PULL and MODELS_BASE_URL: with no verified ASR model, the first media source downloads one. */
        autoPull?: boolean; baseUrl?: string; stallMs?: number;
      };
      /** PODCAST_SCRIPT_MAX_CHARS: a script the audio step would refuse is never handed out. */
      scriptMaxChars?: number;
      /** SOURCE_EXTRACT_MAX_SECONDS and SOURCE_EXTRACT_MEMORY_MB: each source is read in a child process of its own within them. */
      extractLimits?: ExtractLimits;
    },
  ) {}

  private async readSource(p: PodcastScriptParams, ctx: JobContext): Promise<ExtractedSource> {
    if (p.sourceType === 4) {
      const text = (p.text ?? '').trim();
      // Pasted text too: a playlist pasted as the article became an episode titled "#EXTM3U" (found from outside).
      const playlist = sniffPlaylist(Buffer.from(text.slice(0, 4096)));
      if (playlist) throw playlistRefusal(playlist);
      // A pasted article usually starts with its headline on a line of its own.
      return { title: plainToText(text).title, text, language: detectLanguage(text), kind: 'text' };
    }
    const url = p.url!;
    const file = join(ctx.tmpDir, 'source');
    const fetched = await this.deps.input.fetch(url, file, ctx.signal);
    // A playlist (HLS, M3U, PLS...) lists other files or streams: refused for every source type, never read as text.
    refusePlaylist({ path: file, sniffed: fetched.sniffed, contentType: fetched.contentType, url });
    ctx.onProgress(0.2);
    if (p.sourceType === 2) {
      if (isMedia(fetched.sniffed)) return this.transcribe(file, url, ctx, p.language);
      let n = 0;
      const fetchToFile = async (u: string) => {
        const path = join(ctx.tmpDir, `captions-${n++}`);
        await this.deps.input.fetch(u, path, ctx.signal);
        return path;
      };
      // The page and its caption documents are parsed in the extraction child, off this event loop.
      const captions = await videoCaptionsInWorker(file, url, fetchToFile, {}, this.deps.extractLimits ?? DEFAULT_EXTRACT_LIMITS, ctx.signal);
      if (!captions) throw new TaskFailure('The video page exposes no captions or transcript to build a script from');
      return captions;
    }
    // An attachment that is a recording is transcribed like a media link.
    if (p.sourceType === 3 && isMedia(fetched.sniffed)) return this.transcribe(file, url, ctx, p.language);
    // Off the event loop, in a child process with a heap cap and a time limit: a hostile document fails only its own task.
    return extractInWorker({ path: file, sniffed: fetched.sniffed, contentType: fetched.contentType, url }, {}, this.deps.extractLimits ?? DEFAULT_EXTRACT_LIMITS, ctx.signal);
  }

  /** Audio/video source -> Whisper transcript, in the engine thread pool (never on the API's loop). */
  private async transcribe(file: string, url: string, ctx: JobContext, language: string | null | undefined): Promise<ExtractedSource> {
    const asr = this.deps.asr;
    const models = asr ? { modelsDir: asr.modelsDir, ...(asr.catalog ? { catalog: asr.catalog } : {}) } : null;
    let found = models ? await findAsrModel(models) : null;
    let pullNote: string | undefined;
    let start = 0.2;
    const wanted = asr?.autoPull ? defaultAsrEntry(asr.catalog ?? MODEL_CATALOG) : undefined;
    if (asr && models && found?.name === null && wanted) {
      // First use with MODELS_AUTO_PULL: the default model is downloaded (0.2..0.35 of the task), verified, then used.
      pullNote = await this.puller.pull([wanted], {
        modelsDir: asr.modelsDir, signal: ctx.signal, onProgress: (f) => ctx.onProgress(0.2 + 0.15 * f),
        ...(asr.baseUrl ? { baseUrl: asr.baseUrl } : {}), ...(asr.stallMs ? { stallMs: asr.stallMs } : {}),
      });
      if (!pullNote) found = await findAsrModel(models);
      start = 0.35;
    }
    if (!asr || !found || found.name === null) {
      // There is no built-in recognizer to fall back to: the task fails with what is wrong and how to fix it.
      const why = pullNote ?? (found?.name === null ? found.reason : null);
      throw new TaskFailure(
        'The source is an audio or video file: transcribing it needs a speech recognition model, and none is installed' +
          (why ? ` (${why})` : '') + '. The server operator can install one with: npm run --silent cli -- models pull whisper-tiny',
      );
    }
    const { path: audioPath } = await openAudioInput(file, { media: asr.media, tmpDir: ctx.tmpDir, signal: ctx.signal });
    // The header's duration is a claim: the limit applies to what the decoder yields (stopped at the limit).
    const frames = await decodedFrames(audioPath, {
      ffmpeg: asr.media.ffmpeg, sampleRate: SAMPLE_RATE, maxSeconds: asr.maxSeconds, signal: ctx.signal, overMessage: (max) => asrLimitMessage(max),
    });
    const input: AsrThreadInput = { inputPath: audioPath, ffmpeg: asr.media.ffmpeg, model: found.name, files: found.files, totalSeconds: frames / SAMPLE_RATE, maxSeconds: asr.maxSeconds };
    // The podcast language the caller chose is what the recording is expected to be in: no detection guess.
    if (language) input.language = language === 'zh_yue' ? 'yue' : language;
    const out = await asr.threads.run('asr', input, { signal: ctx.signal, onProgress: (f) => ctx.onProgress(start + (0.8 - start) * f) });
    return transcriptSource(out.text, out.language, url);
  }

  async run(ctx: JobContext): Promise<JobOutcome> {
    const p = PodcastScriptParams.parse(ctx.task.params);
    const source = await this.readSource(p, ctx);
    const language = p.language ?? source.language ?? 'en';
    const all = await this.deps.voices.list();
    const chosen = p.speakers?.length
      ? p.speakers.map((id) => all.find((v) => v.id === id)).filter((v): v is VoiceRecord => Boolean(v))
      : defaultSpeakers(all, language);
    if (chosen.length === 0) throw new TaskFailure(`No podcast voice speaks ${language}`);
    // The same host names as the podcast voice list shows (display_name there).
    const hosts = hostNames(all.filter((v) => isPodcastLanguage(v.language)));
    const taken = new Set<string>();
    const speakers: SpeakerInfo[] = chosen.map((v, i) => {
      let name = hosts.get(v.id) ?? v.display_name;
      // Hosts a listener can tell apart by name: two voices may share one (Sophie speaks fr and de), and a task queued
      // before create refused the same voice twice may still have it.
      if (taken.has(name)) name = `${name} ${ROLES[i] ?? i + 1}`;
      taken.add(name);
      return { role: ROLES[i] ?? `S${i + 1}`, name, avatar: this.deps.avatarUrl(v.id), voiceId: String(v.id), gender: v.gender === 2 ? 'female' : 'male' };
    });
    const sourceData = p.url ?? source.text.slice(0, 300);
    const request = { source, sourceData, language, style: p.style, duration: p.duration, speakers };
    const generated: GeneratedScript = this.deps.localLlm
      ? await this.deps.localLlm.generate(request, ctx)
      : { script: await this.deps.generator.generate(request, ctx.signal), engine: this.deps.generator.id };
    ctx.onProgress(0.95);
    const result: PodcastScriptResult = {
      ...withinLimits(generated.script, this.deps.scriptMaxChars ?? DEFAULT_PODCAST_SCRIPT_MAX_CHARS), source_data: sourceData, language, avatar: null,
      ...(generated.note ? { engineNote: generated.note } : {}),
    };
    return {
      result,
      engine: generated.engine,
      price: 0,
      audioSeconds: 0,
    };
  }
}
