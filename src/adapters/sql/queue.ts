import type { Kysely } from 'kysely';
import type { Database } from './schema.js';
import type { JobPayload, JobQueue, ReservedJob } from '../../ports/queue.js';
import type { TaskKind } from '../../domain/task.js';

/**
 * Durable queue in the task database (the embedded profile). Reservation is optimistic: pick a
 * candidate, then claim it with a guarded UPDATE; only one claimer can see one updated row, which
 * holds across processes sharing the file too.
 */
export class SqlJobQueue implements JobQueue {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly now: () => number = Date.now,
  ) {}

  async enqueue(job: JobPayload): Promise<void> {
    const now = this.now();
    await this.db
      .insertInto('jobs')
      .values({
        task_id: job.taskId,
        kind: job.kind,
        state: 'queued',
        attempts: 0,
        worker_id: null,
        lease_until: 0,
        available_at: now,
        created_at: now,
      })
      .execute();
  }

  async reserve(kinds: readonly TaskKind[], workerId: string, leaseMs: number): Promise<ReservedJob | null> {
    if (kinds.length === 0) return null;
    for (let tries = 0; tries < 5; tries++) {
      const now = this.now();
      const candidate = await this.db
        .selectFrom('jobs')
        .select(['task_id', 'kind', 'attempts', 'state', 'lease_until'])
        .where('kind', 'in', [...kinds])
        .where((eb) =>
          eb.or([
            eb.and([eb('state', '=', 'queued'), eb('available_at', '<=', now)]),
            eb.and([eb('state', '=', 'active'), eb('lease_until', '<', now)]),
          ]),
        )
        .orderBy('seq')
        .limit(1)
        .executeTakeFirst();
      if (!candidate) return null;
      const res = await this.db
        .updateTable('jobs')
        .set({ state: 'active', worker_id: workerId, lease_until: now + leaseMs, attempts: candidate.attempts + 1 })
        .where('task_id', '=', candidate.task_id)
        .where('state', '=', candidate.state)
        .where('attempts', '=', candidate.attempts)
        .executeTakeFirst();
      if (Number(res.numUpdatedRows) === 1) {
        return { taskId: candidate.task_id, kind: candidate.kind as TaskKind, attempt: Number(candidate.attempts) + 1 };
      }
    }
    return null;
  }

  async heartbeat(taskId: string, workerId: string, leaseMs: number): Promise<boolean> {
    const res = await this.db
      .updateTable('jobs')
      .set({ lease_until: this.now() + leaseMs })
      .where('task_id', '=', taskId)
      .where('worker_id', '=', workerId)
      .where('state', '=', 'active')
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  async ack(taskId: string): Promise<void> {
    await this.db.deleteFrom('jobs').where('task_id', '=', taskId).execute();
  }

  async release(taskId: string, workerId: string, delayMs: number): Promise<void> {
    await this.db
      .updateTable('jobs')
      .set({ state: 'queued', worker_id: null, lease_until: 0, available_at: this.now() + delayMs })
      .where('task_id', '=', taskId)
      .where('worker_id', '=', workerId)
      .execute();
  }

  async position(taskId: string): Promise<number | null> {
    const job = await this.db.selectFrom('jobs').select(['seq', 'kind', 'state']).where('task_id', '=', taskId).executeTakeFirst();
    if (!job) return null;
    if (job.state === 'active') return 0;
    const ahead = await this.db
      .selectFrom('jobs')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('kind', '=', job.kind)
      .where('state', '=', 'queued')
      .where('seq', '<', job.seq)
      .executeTakeFirstOrThrow();
    return Number(ahead.n) + 1;
  }

  async depth(): Promise<Partial<Record<TaskKind, number>>> {
    const rows = await this.db
      .selectFrom('jobs')
      .select(['kind', (eb) => eb.fn.countAll<number>().as('n')])
      .where('state', '=', 'queued')
      .groupBy('kind')
      .execute();
    return Object.fromEntries(rows.map((r) => [r.kind, Number(r.n)]));
  }

  async close(): Promise<void> {}
}
