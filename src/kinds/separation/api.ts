import { AppError } from '../../domain/errors.js';
import { publicStatus, type QueriedTask } from '../../domain/task.js';
import type { BlobUrls } from '../../ports/blob-store.js';
import { httpUrlOrNull } from '../fields.js';
import { ownLinkOrRefuse } from '../own-links.js';
import { roundedProgress, type ApiKind, type KindApi, type PresentTools, type PreparedTask } from '../kind.js';
import { SeparationCreateBody, SeparationParams, SeparationResult, SeparationQueryData, SEPARATION_EXAMPLE } from './contract.js';

/** An http(s) URL or 100002 naming the field; the fetcher re-checks addresses (SSRF) when the worker downloads it. */
export function requireHttpUrl(field: string, value: string): string {
  const url = httpUrlOrNull(value);
  if (!url) throw new AppError('INVALID_PARAMETERS', `Invalid parameters: ${field}: must be an http or https URL`);
  return url;
}

export class SeparationKindApi implements KindApi<SeparationCreateBody> {
  readonly kind = 'separation' as const;

  /** `urls`: recognises this server's own file links, so an expired one is refused at create (null: left to the worker). */
  constructor(private readonly urls: Pick<BlobUrls, 'ownKey'> | null = null) {}

  async prepare(body: SeparationCreateBody): Promise<PreparedTask> {
    const params: SeparationParams = {
      v: 1,
      inputUrl: requireHttpUrl('inputurl', body.inputurl),
      modelType: body.model_type,
      separationType: body.separation_type ?? 'stems',
      format: body.output_format ?? 'mp3',
    };
    if (this.urls) await ownLinkOrRefuse('inputurl', params.inputUrl, this.urls);
    return { params, knownPrice: null };
  }

  async present(task: QueriedTask, tools: PresentTools): Promise<Record<string, unknown>> {
    const status = publicStatus(task.state);
    // The one query that shows something of its params (video_url): read for it alone.
    const params = SeparationParams.parse(await tools.params());
    const data: Record<string, unknown> = { status, file_type: '', video_url: params.inputUrl, output: {}, zip_url: '' };
    if (status === 'success' && task.result) {
      const r = SeparationResult.parse(task.result);
      data.file_type = r.fileType;
      data.output = Object.fromEntries(await Promise.all(Object.entries(r.stems).map(async ([name, key]) => [name, await tools.fileUrl(key)])));
      data.zip_url = await tools.fileUrl(r.zipKey);
      data.engine = task.engine;
      if (r.engineNote) data.engine_note = r.engineNote;
      if (r.stemNotes) data.stem_notes = r.stemNotes;
      data.duration = r.durationSeconds;
      data.credits = task.charged;
    } else if (status === 'failed') {
      data.error = task.error;
    } else {
      data.progress = roundedProgress(task);
    }
    return data;
  }
}

export function separationApiKind(api: SeparationKindApi): ApiKind<typeof SeparationCreateBody> {
  return {
    route: { kind: 'separation', tag: 'Separation', create: 'separation/task/create', get: 'separation/task/get', body: SeparationCreateBody, createdIdField: 'job_id', queryIdField: 'job_id', queryData: SeparationQueryData, example: SEPARATION_EXAMPLE },
    api,
  };
}
