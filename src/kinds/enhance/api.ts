import { AppError } from '../../domain/errors.js';
import { publicStatus, type QueriedTask } from '../../domain/task.js';
import { ENHANCE_FLAGS, type EnhanceFlag } from '../../domain/vocabulary.js';
import { roundedProgress, type ApiKind, type KindApi, type PresentTools, type PreparedTask } from '../kind.js';
import { requireHttpUrl } from '../separation/api.js';
import { EnhanceCreateBody, EnhanceResult, type EnhanceParams, EnhanceQueryData, ENHANCE_EXAMPLE } from './contract.js';

const isFlag = (name: string): name is EnhanceFlag => (ENHANCE_FLAGS as readonly string[]).includes(name);

export class EnhanceKindApi implements KindApi<EnhanceCreateBody> {
  readonly kind = 'enhance' as const;

  /** `supported`: the flags this server renders (all fourteen today); others are refused at create, never faked. */
  constructor(private readonly supported: readonly EnhanceFlag[] = ENHANCE_FLAGS) {}

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
    return { params, knownPrice: null };
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
