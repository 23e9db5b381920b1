import { AppError } from '../../domain/errors.js';
import { DEFAULT_PODCAST_SCRIPT_MAX_CHARS, scriptCharacters, tooLong } from '../../domain/podcast-limits.js';
import type { QueriedTask } from '../../domain/task.js';
import { PODCAST_MIN_CREDITS } from '../../domain/pricing.js';
import { isPodcastLanguage } from '../../domain/vocabulary.js';
import type { TaskStore } from '../../ports/task-store.js';
import type { VoiceLibrary, VoiceRecord } from '../../ports/voices.js';
import type { Caller } from '../../services/auth.js';
import { hasSomethingToSay } from '../fields.js';
import type { ApiKind, KindApi, PresentTools, PreparedTask } from '../kind.js';
import { scriptFields } from '../podcast-script/api.js';
import { PodcastScriptResult } from '../podcast-script/contract.js';
import { PodcastAudioCreateBody, type PodcastAudioParams, PodcastAudioQueryData, PODCAST_AUDIO_EXAMPLE } from './contract.js';
import { z } from 'zod';

/** A voice_id in a script line: our numeric id, as a number or a string (the spec shows strings). */
function parseVoiceId(v: string | number | undefined): number | null {
  if (typeof v === 'number' && Number.isInteger(v)) return v;
  if (typeof v === 'string' && /^\d+$/.test(v.trim())) return Number(v.trim());
  return null;
}

const StoredScript = PodcastScriptResult.partial();
const StoredEpisode = z.object({ fileKey: z.string().optional(), durationSeconds: z.number().optional(), engineNote: z.string().optional() });

export class PodcastAudioKindApi implements KindApi<PodcastAudioCreateBody> {
  readonly kind = 'podcast_audio' as const;

  constructor(
    private readonly voices: VoiceLibrary,
    private readonly tasks: TaskStore,
    private readonly limits: { scriptMaxChars: number } = { scriptMaxChars: DEFAULT_PODCAST_SCRIPT_MAX_CHARS },
  ) {}

  async prepare(body: PodcastAudioCreateBody, caller: Caller): Promise<PreparedTask> {
    // Each line is bounded by the schema; the script as a whole by the operator's limit, before any lookup.
    const total = scriptCharacters(body.podcast_script);
    if (total > this.limits.scriptMaxChars) {
      throw new AppError('INVALID_PARAMETERS', `Invalid parameters: podcast_script: ${tooLong(total, this.limits.scriptMaxChars, 'characters of text in all lines')}`);
    }
    const script = await this.tasks.get(body.global_id);
    // Another account's, unknown, unfinished or non-script ids are all "not found" for this caller.
    if (!script || script.kind !== 'podcast_script' || script.accountId !== caller.account.id || script.expiresAt <= Date.now()) {
      throw new AppError('TASK_NOT_FOUND');
    }
    if (script.state !== 'success' || !script.result) {
      throw new AppError('INVALID_PARAMETERS', 'Invalid parameters: global_id: the script task has not succeeded');
    }
    const original = StoredScript.parse(script.result);
    const language = original.language && isPodcastLanguage(original.language) ? original.language : 'en';
    const roleVoice = new Map((original.podcast_script ?? []).map((l) => [l.role, parseVoiceId(l.voice_id)]));
    const lines: PodcastAudioParams['lines'] = [];
    for (const [i, line] of body.podcast_script.entries()) {
      // An emptied line is a removed line, and so is one with nothing to say (only emoji, symbols or punctuation):
      // TTS refuses such text (hasSomethingToSay), and spoken in an episode it failed the whole task after create.
      if (!hasSomethingToSay(line.text)) continue;
      const voiceId = parseVoiceId(line.voice_id) ?? roleVoice.get(line.role) ?? null;
      const voice: VoiceRecord | null = voiceId === null ? null : await this.voices.find(voiceId);
      if (!voice) {
        throw new AppError('INVALID_PARAMETERS', `Invalid parameters: podcast_script[${i}].voice_id: no voice ${line.voice_id ?? ''} for role ${line.role}`);
      }
      lines.push({ role: line.role, name: line.name ?? line.role, avatar: line.avatar ?? '', text: line.text, voiceId: voice.id, sourceIndex: i });
    }
    if (lines.length === 0) throw new AppError('INVALID_PARAMETERS', 'Invalid parameters: podcast_script: no line has something to say (a line that is empty or has no letter or digit is left out)');
    const params: PodcastAudioParams = {
      v: 1,
      scriptTaskId: script.id,
      title: body.title ?? original.title ?? '',
      processedContent: body.processed_content ?? '',
      language,
      lines,
      hightlights: body.hightlights ?? [],
      sourceData: original.source_data ?? '',
      trainData: original.train_data ?? '',
    };
    // Its length, and so its price, is known once it is spoken; the least it costs is held meanwhile, so that many
    // episodes created together on a small balance cannot all be spoken for the one charge the balance allows.
    return { params, knownPrice: null, holdUpTo: PODCAST_MIN_CREDITS };
  }

  async present(task: QueriedTask, tools: PresentTools): Promise<Record<string, unknown>> {
    const data = scriptFields(task);
    const r = StoredEpisode.parse(task.result ?? {});
    if (data.status === 'success' && r.fileKey) {
      data.file_url = await tools.fileUrl(r.fileKey);
      data.duration = r.durationSeconds;
      data.credits = task.charged;
      if (r.engineNote) data.engine_note = r.engineNote;
    }
    return data;
  }
}

export function podcastAudioApiKind(api: PodcastAudioKindApi): ApiKind<typeof PodcastAudioCreateBody> {
  return {
    route: { kind: 'podcast_audio', tag: 'Podcast', create: 'podcast/audio/create', get: 'podcast/audio/get', body: PodcastAudioCreateBody, createdIdField: 'global_id', queryIdField: 'global_id', queryData: PodcastAudioQueryData, example: PODCAST_AUDIO_EXAMPLE },
    api,
  };
}
