import { AppError } from '../../domain/errors.js';
import { DEFAULT_PODCAST_TEXT_MAX_CHARS, tooLong } from '../../domain/podcast-limits.js';
import { countCharacters } from '../../domain/pricing.js';
import { publicStatus, type QueriedTask } from '../../domain/task.js';
import { isPodcastLanguage } from '../../domain/vocabulary.js';
import type { VoiceLibrary } from '../../ports/voices.js';
import { httpUrlOrNull } from '../fields.js';
import { roundedProgress, type ApiKind, type KindApi, type PresentTools, type PreparedTask } from '../kind.js';
import { PodcastScriptCreateBody, PodcastScriptResult, type PodcastScriptParams, PodcastScriptQueryData, PODCAST_SCRIPT_EXAMPLE } from './contract.js';

/** What both podcast queries read of a stored result: every field may be missing while waiting. */
const StoredScript = PodcastScriptResult.partial();

/** The fields both podcast queries share; empty while waiting, filled from the result on success. */
export function scriptFields(task: QueriedTask): Record<string, unknown> {
  const r = StoredScript.parse(task.result ?? {});
  const status = publicStatus(task.state);
  const data: Record<string, unknown> = {
    status,
    global_id: task.id,
    source_data: r.source_data ?? '',
    train_data: r.train_data ?? '',
    podcast_script: r.podcast_script ?? [],
    hightlights: r.hightlights ?? [],
    processed_content: r.processed_content ?? '',
    title: r.title ?? '',
    avatar: r.avatar ?? null,
    podcast_script_txt: r.podcast_script_txt ?? '',
    create_time: Math.floor(task.createdAt / 1000),
  };
  if (status === 'success') {
    data.engine = task.engine;
    if (r.language) data.language = r.language;
    if (r.engineNote) data.engine_note = r.engineNote;
  }
  if (status === 'failed') data.error = task.error;
  if (status === 'waiting') data.progress = roundedProgress(task);
  return data;
}

export class PodcastScriptKindApi implements KindApi<PodcastScriptCreateBody> {
  readonly kind = 'podcast_script' as const;

  constructor(
    private readonly voices: VoiceLibrary,
    private readonly limits: { textMaxChars: number } = { textMaxChars: DEFAULT_PODCAST_TEXT_MAX_CHARS },
  ) {}

  async prepare(body: PodcastScriptCreateBody): Promise<PreparedTask> {
    // The step is free and the text is stored with the task: refused before anything else is looked at.
    if (body.text !== undefined && body.text.length > this.limits.textMaxChars) {
      const n = countCharacters(body.text);
      if (n > this.limits.textMaxChars) throw new AppError('INVALID_PARAMETERS', `Invalid parameters: text: ${tooLong(n, this.limits.textMaxChars)}`);
    }
    if (body.url !== undefined && body.source_type !== 4 && !httpUrlOrNull(body.url)) {
      throw new AppError('INVALID_PARAMETERS', 'Invalid parameters: url: must be an http or https URL');
    }
    if (body.speakers?.length) {
      for (const id of body.speakers) {
        const voice = await this.voices.find(id);
        if (!voice || !isPodcastLanguage(voice.language)) {
          throw new AppError('INVALID_PARAMETERS', `Invalid parameters: speakers: no podcast voice ${id} (see GET /audio/api/v1/api-keys/podcast/voices)`);
        }
      }
    }
    const params: PodcastScriptParams = {
      v: 1,
      sourceType: body.source_type,
      url: body.source_type === 4 ? null : (body.url?.trim() ?? null),
      text: body.source_type === 4 ? (body.text ?? null) : null,
      speakers: body.speakers?.length ? body.speakers : null,
      style: body.style ?? 1,
      duration: body.duration ?? 2,
      language: body.language ?? null,
      useMode: body.use_mode ?? null,
      commercialUse: body.commercial_use ?? null,
    };
    // Script creation is free (docs/api.md); the audio step is billed.
    return { params, knownPrice: null };
  }

  async present(task: QueriedTask, _tools: PresentTools): Promise<Record<string, unknown>> {
    return scriptFields(task);
  }
}

export function podcastScriptApiKind(api: PodcastScriptKindApi): ApiKind<typeof PodcastScriptCreateBody> {
  return {
    route: { kind: 'podcast_script', tag: 'Podcast', create: 'podcast/script/create', get: 'podcast/script/get', body: PodcastScriptCreateBody, createdIdField: 'global_id', queryIdField: 'global_id', queryData: PodcastScriptQueryData, example: PODCAST_SCRIPT_EXAMPLE },
    api,
  };
}
