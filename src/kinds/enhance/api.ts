import { AppError } from '../../domain/errors.js';
import { publicStatus, type QueriedTask } from '../../domain/task.js';
import { ENHANCE_FLAGS, type EnhanceFlag } from '../../domain/vocabulary.js';
import { kindInputTooLarge, type KindInputLimit } from '../../domain/input-limits.js';
import type { BlobStore, BlobUrls } from '../../ports/blob-store.js';
import { ownLinkOrRefuse } from '../own-links.js';
import { roundedProgress, type ApiKind, type KindApi, type PresentTools, type PreparedTask } from '../kind.js';
import { requireHttpUrl } from '../separation/api.js';
import { EnhanceCreateBody, EnhanceResult, type EnhanceParams, EnhanceQueryData, ENHANCE_EXAMPLE } from './contract.js';

const isFlag = (name: string): name is EnhanceFlag => (ENHANCE_FLAGS as readonly string[]).includes(name);

/** How long a create waits for the store to say an own upload's size before leaving the check to the worker. */
const OWN_INPUT_STAT_TIMEOUT_MS = 2000;

/** ENHANCE_MAX_BYTES, and how to read the size of an input that is one of this server's own files. */
export interface EnhanceInputCheck {
  limit: KindInputLimit;
  blobs: Pick<BlobStore, 'stat'>;
  urls: Pick<BlobUrls, 'ownKey'>;
}

export class EnhanceKindApi implements KindApi<EnhanceCreateBody> {
  readonly kind = 'enhance' as const;

  /**
   * `input`: refuse at create an own upload over ENHANCE_MAX_BYTES (null: leave it to the worker).
   * `supported`: the flags this server renders (all fourteen today); others are refused at create, never faked.
   */
  constructor(
    private readonly input: EnhanceInputCheck | null = null,
    private readonly supported: readonly EnhanceFlag[] = ENHANCE_FLAGS,
  ) {}

  async prepare(body: EnhanceCreateBody): Promise<PreparedTask> {
    const on = Object.entries(body.enhance_type).filter(([, v]) => v === true).map(([k]) => k).filter(isFlag);
    const missing = on.filter((f) => !this.supported.includes(f));
    if (missing.length) {
      throw new AppError(
        'INVALID_PARAMETERS',
        `Invalid parameters: enhance_type.${missing[0]}: not available on this server yet (available: ${this.supported.join(', ')})`,
      );
    }
    const params: EnhanceParams = { v: 1, inputUrl: requireHttpUrl('inputurl', body.inputurl), flags: on.length ? on : ['autoid'] };
    await this.refuseOversizedOwnInput(params.inputUrl);
    return { params, knownPrice: null };
  }

  /**
   * A link of this server the worker would not honour (expired, changed) is refused here (ownLinkOrRefuse). An upload
   * of this server over ENHANCE_MAX_BYTES would only fail once a worker fetched it, after the client had waited in
   * the queue: its size is known now, so refuse the create (no task, no charge). Recognised as the input fetcher
   * recognises it (BlobUrls.ownKey), never by parsing the URL here. Any other URL is sized by its download. A size
   * that cannot be read (blob gone, store down or slow) refuses nothing: the worker says what is wrong then.
   */
  private async refuseOversizedOwnInput(url: string): Promise<void> {
    if (!this.input) return;
    const { limit, blobs, urls } = this.input;
    const own = await ownLinkOrRefuse('inputurl', url, urls);
    if (own.kind !== 'own') return;
    const size = await ownInputSize(own.key, blobs).catch(() => null);
    if (size !== null && size > limit.maxBytes) throw kindInputTooLarge('enhance', limit, `the inputurl's file is ${size} bytes`);
  }

  async present(task: QueriedTask, tools: PresentTools): Promise<Record<string, unknown>> {
    const status = publicStatus(task.state);
    const data: Record<string, unknown> = { status, output: '', result: '', file_size: 0 };
    if (status === 'success' && task.result) {
      const r = EnhanceResult.parse(task.result);
      data.output = data.result = await tools.fileUrl(r.outputKey);
      data.file_size = r.fileSize;
      data.duration = r.durationSeconds;
      data.stages = r.stages;
      data.reasons = r.reasons;
      data.engine = task.engine;
      data.credits = task.charged;
    } else if (status === 'failed') {
      data.error = task.error;
    } else {
      data.tasks_position = (await tools.position(task.id)) ?? 0;
      data.progress = roundedProgress(task);
    }
    return data;
  }
}

export function enhanceApiKind(api: EnhanceKindApi): ApiKind<typeof EnhanceCreateBody> {
  return {
    route: { kind: 'enhance', tag: 'Enhancement', create: 'enhance/task/create', get: 'enhance/task/get', body: EnhanceCreateBody, createdIdField: 'job_id', queryIdField: 'job_id', queryData: EnhanceQueryData, example: ENHANCE_EXAMPLE, createdExtra: { model: 2 } },
    api,
  };
}

/** The size of an own blob; null when it is gone or the store gives no answer in time. */
async function ownInputSize(key: string, blobs: Pick<BlobStore, 'stat'>): Promise<number | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), OWN_INPUT_STAT_TIMEOUT_MS)));
  try {
    return (await Promise.race([blobs.stat(key), late]))?.size ?? null;
  } finally {
    clearTimeout(timer);
  }
}
