import { AppError } from '../../domain/errors.js';
import { publicStatus, type TaskRecord } from '../../domain/task.js';
import type { TaskStore } from '../../ports/task-store.js';
import type { VoiceLibrary, VoiceRecord } from '../../ports/voices.js';
import { PODCAST_LANGUAGES } from '../../http/schemas.js';
import type { Caller } from '../auth.js';
import type { KindApi, PresentTools, PreparedTask } from './kind-api.js';

type ScriptBody = {
  source_type: number;
  speakers?: number[];
  style?: number;
  duration?: number;
  use_mode?: string;
  commercial_use?: number;
  language?: (typeof PODCAST_LANGUAGES)[number];
  text?: string;
  url?: string;
};

type AudioBody = {
  title?: string;
  processed_content?: string;
  podcast_script: Array<{ role: string; name?: string; avatar?: string | null; text: string; voice_id?: string | number }>;
  hightlights?: Array<{ highlight: string; index: number; script_start_index: number; script_end_index: number }>;
  global_id: string;
};

/** Stored with a script task; read by the script handler. */
export interface PodcastScriptParams {
  sourceType: number;
  url: string | null;
  text: string | null;
  speakers: number[] | null;
  style: number;
  duration: number;
  language: string | null;
  useMode: string | null;
  commercialUse: number | null;
}

export interface PodcastAudioParams {
  scriptTaskId: string;
  title: string;
  processedContent: string;
  language: string;
  /** `sourceIndex` is the line's index in the submitted script (highlights refer to it). */
  lines: Array<{ role: string; name: string; avatar: string; text: string; voiceId: number; sourceIndex: number }>;
  hightlights: Array<{ highlight: string; index: number; script_start_index: number; script_end_index: number }>;
  /** Carried over from the script task so the audio result has the same fields. */
  sourceData: string;
  trainData: string;
}

const isPodcastLanguage = (l: string) => (PODCAST_LANGUAGES as readonly string[]).includes(l);

/** A voice_id in a script line: our numeric id, as a number or a string (the spec shows strings). */
function parseVoiceId(v: string | number | undefined): number | null {
  if (typeof v === 'number' && Number.isInteger(v)) return v;
  if (typeof v === 'string' && /^\d+$/.test(v.trim())) return Number(v.trim());
  return null;
}

function createTime(task: TaskRecord): number {
  return Math.floor(task.createdAt / 1000);
}

/** The fields both podcast queries share; empty while waiting, filled from the result on success. */
function scriptFields(task: TaskRecord, tools: PresentTools): Record<string, unknown> {
  const r = (task.result ?? {}) as Record<string, unknown>;
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
    avatar: typeof r.avatarKey === 'string' ? tools.fileUrl(r.avatarKey) : (r.avatar ?? null),
    podcast_script_txt: r.podcast_script_txt ?? '',
    create_time: createTime(task),
  };
  if (status === 'success') {
    data.engine = task.engine;
    if (r.language) data.language = r.language;
  }
  if (status === 'failed') data.error = task.error;
  if (status === 'waiting') data.progress = Math.round(task.progress * 100) / 100;
  return data;
}

export class PodcastScriptKindApi implements KindApi<ScriptBody> {
  readonly kind = 'podcast_script' as const;

  constructor(private readonly voices: VoiceLibrary) {}

  async prepare(body: ScriptBody): Promise<PreparedTask> {
    if (body.url !== undefined && body.source_type !== 4) {
      let parsed: URL | null = null;
      try {
        parsed = new URL(body.url.trim());
      } catch {
        /* refused below */
      }
      if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) {
        throw new AppError('INVALID_PARAMETERS', 'Invalid parameters: url: must be an http or https URL');
      }
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
    return { params: { ...params }, knownPrice: null };
  }

  async present(task: TaskRecord, tools: PresentTools): Promise<Record<string, unknown>> {
    return scriptFields(task, tools);
  }
}

export class PodcastAudioKindApi implements KindApi<AudioBody> {
  readonly kind = 'podcast_audio' as const;

  constructor(
    private readonly voices: VoiceLibrary,
    private readonly tasks: TaskStore,
  ) {}

  async prepare(body: AudioBody, caller: Caller): Promise<PreparedTask> {
    const script = await this.tasks.get(body.global_id);
    // Another account's, unknown, unfinished or non-script ids are all "not found" for this caller.
    if (!script || script.kind !== 'podcast_script' || script.accountId !== caller.account.id || script.expiresAt <= Date.now()) {
      throw new AppError('TASK_NOT_FOUND');
    }
    if (script.state !== 'success' || !script.result) {
      throw new AppError('INVALID_PARAMETERS', 'Invalid parameters: global_id: the script task has not succeeded');
    }
    const original = script.result as {
      language?: string;
      podcast_script?: Array<{ role: string; voice_id: string }>;
      source_data?: string;
      train_data?: string;
    };
    const language = original.language && isPodcastLanguage(original.language) ? original.language : 'en';
    const roleVoice = new Map((original.podcast_script ?? []).map((l) => [l.role, parseVoiceId(l.voice_id)]));
    const lines: PodcastAudioParams['lines'] = [];
    for (const [i, line] of body.podcast_script.entries()) {
      if (!line.text.trim()) continue; // an emptied line is a removed line
      const voiceId = parseVoiceId(line.voice_id) ?? roleVoice.get(line.role) ?? null;
      const voice: VoiceRecord | null = voiceId === null ? null : await this.voices.find(voiceId);
      if (!voice) {
        throw new AppError('INVALID_PARAMETERS', `Invalid parameters: podcast_script[${i}].voice_id: no voice ${line.voice_id ?? ''} for role ${line.role}`);
      }
      lines.push({ role: line.role, name: line.name ?? line.role, avatar: line.avatar ?? '', text: line.text, voiceId: voice.id, sourceIndex: i });
    }
    if (lines.length === 0) throw new AppError('INVALID_PARAMETERS', 'Invalid parameters: podcast_script: no line has text');
    const params: PodcastAudioParams = {
      scriptTaskId: script.id,
      title: body.title ?? String((script.result as { title?: string }).title ?? ''),
      processedContent: body.processed_content ?? '',
      language,
      lines,
      hightlights: body.hightlights ?? [],
      sourceData: original.source_data ?? '',
      trainData: original.train_data ?? '',
    };
    return { params: { ...params }, knownPrice: null };
  }

  async present(task: TaskRecord, tools: PresentTools): Promise<Record<string, unknown>> {
    const data = scriptFields(task, tools);
    const r = (task.result ?? {}) as { fileKey?: string; durationSeconds?: number };
    if (data.status === 'success' && r.fileKey) {
      data.file_url = tools.fileUrl(r.fileKey);
      data.duration = r.durationSeconds;
      data.credits = task.charged;
    }
    return data;
  }
}
