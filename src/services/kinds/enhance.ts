import { AppError } from '../../domain/errors.js';
import { publicStatus, type TaskRecord } from '../../domain/task.js';
import { SUPPORTED_FLAGS, type EnhanceFlag } from '../../engines/enhance/chain.js';
import type { KindApi, PresentTools, PreparedTask } from './kind-api.js';
import { requireHttpUrl } from './separation.js';

type Body = { inputurl: string; enhance_type: Record<string, boolean | undefined> };

export interface EnhanceParams {
  inputUrl: string;
  /** The flags that are on; omitted flags are off, and none on means autoid (docs/api.md). */
  flags: EnhanceFlag[];
}

export interface EnhanceResult {
  outputKey: string;
  fileSize: number;
  durationSeconds: number;
  inputSeconds: number;
  stages: string[];
  reasons: Record<string, string>;
}

export class EnhanceKindApi implements KindApi<Body> {
  readonly kind = 'enhance' as const;

  async prepare(body: Body): Promise<PreparedTask> {
    const on = Object.entries(body.enhance_type).filter(([, v]) => v === true).map(([k]) => k as EnhanceFlag);
    const missing = on.filter((f) => !SUPPORTED_FLAGS.includes(f));
    if (missing.length) {
      throw new AppError(
        'INVALID_PARAMETERS',
        `Invalid parameters: enhance_type.${missing[0]}: not available on this server yet (available: ${SUPPORTED_FLAGS.join(', ')})`,
      );
    }
    const params: EnhanceParams = { inputUrl: requireHttpUrl('inputurl', body.inputurl), flags: on.length ? on : ['autoid'] };
    return { params: { ...params }, knownPrice: null };
  }

  async present(task: TaskRecord, tools: PresentTools): Promise<Record<string, unknown>> {
    const status = publicStatus(task.state);
    const data: Record<string, unknown> = { status, output: '', result: '', file_size: 0 };
    if (status === 'success' && task.result) {
      const r = task.result as unknown as EnhanceResult;
      data.output = data.result = tools.fileUrl(r.outputKey);
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
      data.progress = Math.round(task.progress * 100) / 100;
    }
    return data;
  }
}
