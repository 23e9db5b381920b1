import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { TaskFailure } from '../../domain/errors.js';
import { hostNames } from '../../domain/podcast-hosts.js';
import type { VoiceLibrary, VoiceRecord } from '../../ports/voices.js';
import type { PodcastScriptParams } from '../../services/kinds/podcast.js';
import { plainToText } from '../../engines/podcast/extract/plain.js';
import { detectLanguage, extractSource, extractVideoCaptions, transcriptSource, type ExtractedSource } from '../../engines/podcast/sources.js';
import { findAsrModel } from '../../engines/asr/whisper.js';
import { probeMedia, type MediaTools } from '../../media/ffmpeg.js';
import type { SniffedType } from '../../media/sniff.js';
import { PODCAST_LANGUAGES, type ScriptGenerator, type SpeakerInfo } from '../../engines/podcast/script.js';
import type { InputFetcher } from '../input-fetcher.js';
import type { EngineThreadPool } from '../threads/pool.js';
import { asrLimitMessage, type AsrThreadInput, type AsrThreadOutput } from '../threads/asr-task.js';
import type { JobContext, JobOutcome, TaskHandler } from '../handler.js';

const ROLES = 'ABCDEFGH';

function isMedia(sniffed: SniffedType): boolean {
  return sniffed.kind === 'audio' || sniffed.kind === 'video';
}

/** Two hosts by default: a woman and a man speaking the podcast's language, when both exist. */
export function defaultSpeakers(voices: VoiceRecord[], language: string): VoiceRecord[] {
  const own = voices.filter((v) => v.language === language);
  const female = own.find((v) => v.gender === 2);
  const male = own.find((v) => v.gender === 1);
  const picked = [female, male].filter((v): v is VoiceRecord => Boolean(v));
  return picked.length >= 2 ? picked : own.slice(0, 2);
}

/** Podcast step 1: fetch and read the source, then write the script with the configured generator. */
export class PodcastScriptHandler implements TaskHandler {
  readonly kind = 'podcast_script' as const;

  constructor(
    private readonly deps: {
      input: InputFetcher;
      voices: VoiceLibrary;
      generator: ScriptGenerator;
      avatarUrl: (voiceId: number) => string;
      /** Speech recognition for audio/video sources; absent = such sources fail with a clear message. */
      asr?: { pool: EngineThreadPool; media: MediaTools; modelsDir: string; maxSeconds: number };
    },
  ) {}

  private async readSource(p: PodcastScriptParams, ctx: JobContext): Promise<ExtractedSource> {
    if (p.sourceType === 4) {
      const text = (p.text ?? '').trim();
      // A pasted article usually starts with its headline on a line of its own.
      return { title: plainToText(text).title, text, language: detectLanguage(text), kind: 'text' };
    }
    const url = p.url!;
    const file = join(ctx.tmpDir, 'source');
    const fetched = await this.deps.input.fetch(url, file, ctx.signal);
    ctx.onProgress(0.2);
    if (p.sourceType === 2) {
      if (isMedia(fetched.sniffed)) return this.transcribe(file, url, ctx, p.language);
      let n = 0;
      const fetchText = async (u: string) => {
        const path = join(ctx.tmpDir, `captions-${n++}`);
        await this.deps.input.fetch(u, path, ctx.signal);
        return readFile(path, 'utf8');
      };
      const captions = await extractVideoCaptions(file, url, fetchText);
      if (!captions) throw new TaskFailure('The video page exposes no captions or transcript to build a script from');
      return captions;
    }
    // An attachment that is a recording is transcribed like a media link.
    if (p.sourceType === 3 && isMedia(fetched.sniffed)) return this.transcribe(file, url, ctx, p.language);
    return extractSource({ path: file, sniffed: fetched.sniffed, contentType: fetched.contentType, url });
  }

  /** Audio/video source -> Whisper transcript, in the engine thread pool (never on the API's loop). */
  private async transcribe(file: string, url: string, ctx: JobContext, language: string | null | undefined): Promise<ExtractedSource> {
    const asr = this.deps.asr;
    const modelDir = asr ? findAsrModel(asr.modelsDir) : null;
    if (!asr || !modelDir) {
      throw new TaskFailure(
        'The source is an audio or video file: transcribing it needs a speech recognition model, and none is installed. ' +
          'The server operator can install one with: npm run --silent cli -- models pull whisper-tiny',
      );
    }
    const info = await probeMedia(file, { ffprobe: asr.media.ffprobe, signal: ctx.signal }).catch(() => null);
    if (!info) throw new TaskFailure('The media file could not be read');
    const duration = info.durationSeconds ?? 0;
    if (duration > asr.maxSeconds) throw new TaskFailure(asrLimitMessage(asr.maxSeconds, duration));
    const input: AsrThreadInput = { inputPath: file, ffmpeg: asr.media.ffmpeg, modelDir, totalSeconds: duration, maxSeconds: asr.maxSeconds };
    // The podcast language the caller chose is what the recording is expected to be in: no detection guess.
    if (language) input.language = language === 'zh_yue' ? 'yue' : language;
    const out = await asr.pool.run<AsrThreadOutput>('asr', input, { signal: ctx.signal, onProgress: (f) => ctx.onProgress(0.2 + 0.6 * f) });
    return transcriptSource(out.text, out.language, url);
  }

  async run(ctx: JobContext): Promise<JobOutcome> {
    const p = ctx.task.params as unknown as PodcastScriptParams;
    const source = await this.readSource(p, ctx);
    const language = p.language ?? source.language ?? 'en';
    const all = await this.deps.voices.list();
    const chosen = p.speakers?.length
      ? p.speakers.map((id) => all.find((v) => v.id === id)).filter((v): v is VoiceRecord => Boolean(v))
      : defaultSpeakers(all, language);
    if (chosen.length === 0) throw new TaskFailure(`No podcast voice speaks ${language}`);
    // The same host names as the podcast voice list shows (display_name there).
    const hosts = hostNames(all.filter((v) => (PODCAST_LANGUAGES as readonly string[]).includes(v.language)));
    const taken = new Set<string>();
    const speakers: SpeakerInfo[] = chosen.map((v, i) => {
      let name = hosts.get(v.id) ?? v.display_name;
      // The same voice twice still makes two hosts a listener can tell apart by name.
      if (taken.has(name)) name = `${name} ${ROLES[i] ?? i + 1}`;
      taken.add(name);
      return { role: ROLES[i] ?? `S${i + 1}`, name, avatar: this.deps.avatarUrl(v.id), voiceId: String(v.id), gender: v.gender === 2 ? 'female' : 'male' };
    });
    const sourceData = p.url ?? source.text.slice(0, 300);
    const script = await this.deps.generator.generate(
      { source, sourceData, language, style: p.style, duration: p.duration, speakers },
      ctx.signal,
    );
    ctx.onProgress(0.95);
    return {
      result: { ...script, source_data: sourceData, language, avatar: null },
      engine: this.deps.generator.id,
      price: 0,
      audioSeconds: 0,
    };
  }
}
