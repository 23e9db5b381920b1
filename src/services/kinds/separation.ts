import { AppError } from '../../domain/errors.js';
import { publicStatus, type TaskRecord } from '../../domain/task.js';
import type { KindApi, PresentTools, PreparedTask } from './kind-api.js';

type Body = { model_type: number; inputurl: string; separation_type?: 'stems' | 'accompaniment' | 'vocals_accompaniment'; output_format?: 'mp3' | 'wav' | 'flac' };

export interface SeparationParams {
  inputUrl: string;
  modelType: number;
  separationType: 'stems' | 'accompaniment' | 'vocals_accompaniment';
  format: 'mp3' | 'wav' | 'flac';
}

export interface SeparationResult {
  fileType: 'audio' | 'video';
  /** output key -> blob key */
  stems: Record<string, string>;
  zipKey: string;
  durationSeconds: number;
}

/** http(s) only; the fetcher re-checks addresses (SSRF) when the worker downloads it. */
export function requireHttpUrl(field: string, value: string): string {
  const trimmed = value.trim();
  let url: URL | null = null;
  try {
    url = new URL(trimmed);
  } catch {
    /* refused below */
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw new AppError('INVALID_PARAMETERS', `Invalid parameters: ${field}: must be an http or https URL`);
  }
  return trimmed;
}

export class SeparationKindApi implements KindApi<Body> {
  readonly kind = 'separation' as const;

  async prepare(body: Body): Promise<PreparedTask> {
    const params: SeparationParams = {
      inputUrl: requireHttpUrl('inputurl', body.inputurl),
      modelType: body.model_type,
      separationType: body.separation_type ?? 'stems',
      format: body.output_format ?? 'mp3',
    };
    return { params: { ...params }, knownPrice: null };
  }

  async present(task: TaskRecord, tools: PresentTools): Promise<Record<string, unknown>> {
    const status = publicStatus(task.state);
    const params = task.params as unknown as SeparationParams;
    const data: Record<string, unknown> = { status, file_type: '', video_url: params.inputUrl, output: {}, zip_url: '' };
    if (status === 'success' && task.result) {
      const r = task.result as unknown as SeparationResult;
      data.file_type = r.fileType;
      data.output = Object.fromEntries(Object.entries(r.stems).map(([name, key]) => [name, tools.fileUrl(key)]));
      data.zip_url = tools.fileUrl(r.zipKey);
      data.engine = task.engine;
      data.duration = r.durationSeconds;
      data.credits = task.charged;
    } else if (status === 'failed') {
      data.error = task.error;
    } else {
      data.progress = Math.round(task.progress * 100) / 100;
    }
    return data;
  }
}
