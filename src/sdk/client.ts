import { extname, join } from 'node:path';
import { z } from 'zod';
import type { EnhanceFlag, ModelType, PodcastLanguage } from '../domain/vocabulary.js';
import { EnhanceQueryData, type EnhanceCreateBody } from '../kinds/enhance/contract.js';
import { PodcastAudioQueryData, type PodcastAudioCreateBody } from '../kinds/podcast-audio/contract.js';
import { PodcastScriptQueryData, type PodcastScriptCreateBody } from '../kinds/podcast-script/contract.js';
import { SeparationQueryData, type SeparationCreateBody } from '../kinds/separation/contract.js';
import { TtsQueryData, type TtsCreateBody } from '../kinds/tts/contract.js';
import { aboutTask } from './errors.js';
import { TaskClient, type CreateOptions, type WaitOptions } from './tasks.js';
import { SoundryError, Transport, type OnProgress, type TransportOptions } from './transport.js';

/** The create bodies as a caller writes them (before the server's parsing: numeric strings allowed). */
export type TtsCreateInput = z.input<typeof TtsCreateBody>;
export type SeparationCreateInput = z.input<typeof SeparationCreateBody>;
export type EnhanceCreateInput = z.input<typeof EnhanceCreateBody>;
export type PodcastScriptCreateInput = z.input<typeof PodcastScriptCreateBody>;
export type PodcastAudioCreateInput = z.input<typeof PodcastAudioCreateBody>;

export const TtsVoice = z.looseObject({
  id: z.number(), language: z.string(), name: z.string(), display_name: z.string(), emotion: z.array(z.string()),
  /** Soundry additions: a neural voice, and one whose model its first task downloads (docs/api.md). */
  neural: z.literal(true).optional(), downloaded: z.literal(false).optional(),
});
export type TtsVoice = z.infer<typeof TtsVoice>;
const VoiceList = z.object({ total: z.number(), records: z.array(TtsVoice) });

/** Where the input comes from: a local path or Blob (uploaded first) or an http(s) URL (passed as inputurl). */
export type FileInput = string | Blob;
const isUrl = (s: FileInput): s is string => typeof s === 'string' && /^https?:\/\//i.test(s);

/** onCreated and signal reach every request of the run: uploads, creates, polls and downloads. */
export interface RunOptions extends WaitOptions, CreateOptions {
  onProgress?: OnProgress;
  signal?: AbortSignal;
}

/**
 * Typed client of a Soundry server (or any server of the same API). Each kind has create / get / wait from
 * its zod contract, and run(): upload if needed, create, wait with progress, download.
 */
export class Soundry {
  readonly transport: Transport;
  readonly tts: TaskClient<TtsCreateInput, TtsQueryData> & {
    run(body: TtsCreateInput, output: string, opts?: RunOptions): Promise<{ data: TtsQueryData; file: string }>;
    voices(filter?: { language?: string }, opts?: { signal?: AbortSignal }): Promise<TtsVoice[]>;
  };
  readonly separation: TaskClient<SeparationCreateInput, SeparationQueryData> & {
    run(file: FileInput, opts: RunOptions & { modelType: ModelType; outputDir?: string; format?: 'mp3' | 'wav' | 'flac'; separationType?: SeparationCreateInput['separation_type'] }): Promise<{ data: SeparationQueryData; files: Record<string, string> }>;
  };
  readonly enhance: TaskClient<EnhanceCreateInput, EnhanceQueryData> & {
    /** output: the file, or a name made from the result's extension (the server answers MP3 for most inputs, WAV or FLAC for those). */
    run(file: FileInput, opts: RunOptions & { flags?: readonly EnhanceFlag[]; output?: string | ((extension: string) => string) }): Promise<{ data: EnhanceQueryData; file: string }>;
  };
  readonly podcast: {
    script: TaskClient<PodcastScriptCreateInput, PodcastScriptQueryData>;
    audio: TaskClient<PodcastAudioCreateInput, PodcastAudioQueryData>;
    /** Both steps: the script from a URL, a local file (uploaded, source_type 3) or pasted text, then the episode. */
    run(
      source: { url: string; sourceType?: 1 | 2 | 3 } | { file: FileInput } | { text: string },
      opts: RunOptions & { output: string; style?: number; duration?: number; language?: PodcastLanguage; speakers?: number[] },
    ): Promise<{ script: PodcastScriptQueryData; episode: PodcastAudioQueryData; file: string }>;
  };

  constructor(opts: TransportOptions) {
    const t = (this.transport = new Transport(opts));
    const tts = new TaskClient<TtsCreateInput, TtsQueryData>(t, { kind: 'tts', create: 'tts/task/create', get: 'tts/task/get', createdIdField: 'job_id', queryIdField: 'global_id', data: TtsQueryData });
    this.tts = Object.assign(tts, {
      async run(body: TtsCreateInput, output: string, o: RunOptions = {}) {
        const id = await tts.create(body, o);
        const data = await tts.wait(id, o);
        return { data, file: await aboutTask({ id, kind: 'tts', finished: true }, () => t.download(data.output, output, o.onProgress, o)) };
      },
      async voices(filter: { language?: string } = {}, opts: { signal?: AbortSignal } = {}) {
        const q = filter.language ? `?language=${encodeURIComponent(filter.language)}` : '';
        return (await t.get(`/audio/api/v1/api-keys/tts/voices${q}`, VoiceList, opts)).records;
      },
    });

    const separation = new TaskClient<SeparationCreateInput, SeparationQueryData>(t, { kind: 'separation', create: 'separation/task/create', get: 'separation/task/get', createdIdField: 'job_id', queryIdField: 'job_id', data: SeparationQueryData });
    this.separation = Object.assign(separation, {
      async run(file: FileInput, o: RunOptions & { modelType: ModelType; outputDir?: string; format?: 'mp3' | 'wav' | 'flac'; separationType?: SeparationCreateInput['separation_type'] }) {
        const inputurl = isUrl(file) ? file : await t.upload(file, o.onProgress, { signal: o.signal, kind: 'separation' });
        const body: SeparationCreateInput = { model_type: o.modelType, inputurl, ...(o.format ? { output_format: o.format } : {}), ...(o.separationType ? { separation_type: o.separationType } : {}) };
        const id = await separation.create(body, o);
        const data = await separation.wait(id, o);
        const files = await aboutTask({ id, kind: 'separation', finished: true }, async () => {
          // All stems or none: renamed over an earlier run's only once every one is whole (Transport.downloadAll).
          const stems = Object.entries(data.output).map(([stem, url]) => ({ stem, url, dest: join(o.outputDir ?? 'stems', `${stem}.${extensionOf(url, o.format ?? 'mp3')}`) }));
          await t.downloadAll(stems, o.onProgress, o);
          return Object.fromEntries(stems.map((s) => [s.stem, s.dest]));
        });
        return { data, files };
      },
    });

    const enhance = new TaskClient<EnhanceCreateInput, EnhanceQueryData>(t, { kind: 'enhance', create: 'enhance/task/create', get: 'enhance/task/get', createdIdField: 'job_id', queryIdField: 'job_id', data: EnhanceQueryData });
    this.enhance = Object.assign(enhance, {
      async run(file: FileInput, o: RunOptions & { flags?: readonly EnhanceFlag[]; output?: string | ((extension: string) => string) }) {
        // Named, so a file over ENHANCE_MAX_BYTES is refused before it is sent, not after the upload and a failed task.
        const inputurl = isUrl(file) ? file : await t.upload(file, o.onProgress, { signal: o.signal, kind: 'enhance' });
        const id = await enhance.create({ inputurl, enhance_type: Object.fromEntries((o.flags ?? []).map((f) => [f, true])) }, o);
        const data = await enhance.wait(id, o);
        const extension = extensionOf(data.output, 'mp3');
        const output = typeof o.output === 'function' ? o.output(extension) : o.output ?? `enhanced.${extension}`;
        return { data, file: await aboutTask({ id, kind: 'enhance', finished: true }, () => t.download(data.output, output, o.onProgress, o)) };
      },
    });

    const script = new TaskClient<PodcastScriptCreateInput, PodcastScriptQueryData>(t, { kind: 'podcast_script', create: 'podcast/script/create', get: 'podcast/script/get', createdIdField: 'global_id', queryIdField: 'global_id', data: PodcastScriptQueryData });
    const audio = new TaskClient<PodcastAudioCreateInput, PodcastAudioQueryData>(t, { kind: 'podcast_audio', create: 'podcast/audio/create', get: 'podcast/audio/get', createdIdField: 'global_id', queryIdField: 'global_id', data: PodcastAudioQueryData });
    this.podcast = {
      script,
      audio,
      async run(source, o) {
        const common = { speakers: o.speakers ?? [], style: o.style ?? 1, duration: o.duration ?? 2, use_mode: 'ai', commercial_use: 0, ...(o.language ? { language: o.language } : {}) };
        let body: PodcastScriptCreateInput;
        if ('text' in source) body = { source_type: 4, text: source.text, ...common };
        else if ('file' in source) {
          const url = isUrl(source.file) ? source.file : await t.upload(source.file, o.onProgress, { signal: o.signal, kind: 'podcast_script' });
          body = { source_type: 3, url, ...common };
        } else body = { source_type: source.sourceType ?? 1, url: source.url, ...common };
        const scriptId = await script.create(body, o);
        const s = await script.wait(scriptId, o);
        // Step 2 takes step 1's result unchanged, as the spec recommends. Until it is created, errors name step 1's task.
        const audioId = await aboutTask({ id: scriptId, kind: 'podcast_script', finished: true }, () =>
          audio.create({ title: s.title, processed_content: s.processed_content, podcast_script: s.podcast_script, hightlights: s.hightlights, global_id: s.global_id }, o),
        );
        const episode = await audio.wait(audioId, o);
        return aboutTask({ id: audioId, kind: 'podcast_audio', finished: true }, async () => {
          if (!episode.file_url) throw new SoundryError(`Podcast ${episode.global_id} succeeded without a file_url`, 'api');
          return { script: s, episode, file: await t.download(episode.file_url, o.output, o.onProgress, o) };
        });
      },
    };
  }
}

/** The extension of a result URL's file name (query string aside), else the fallback. */
function extensionOf(url: string, fallback: string): string {
  const ext = extname(new URL(url).pathname).slice(1);
  return ext || fallback;
}
