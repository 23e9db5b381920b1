import { CompiledQuery, PostgresAdapter, sql, type Insertable, type Kysely, type Selectable } from 'kysely';
import { compileOnce, slot, type CompiledOnce } from './compiled-once.js';
import type { Database } from './schema.js';
import type { JobPayload } from '../../ports/queue.js';
import type { TaskKind } from '../../domain/task.js';

/** A job this consumer holds: `token` is written on the row at claim time and guards every later change. */
export interface ClaimedRow extends JobPayload {
  token: string;
  /** Counted deliveries including this one. */
  attempt: number;
}

/**
 * The `jobs` table's statements. A row is `queued` (waiting, possibly until available_at for a
 * backoff) or `active` (held by a consumer until lease_until); finished jobs are deleted, so
 * the table only holds live work. `attempts` counts deliveries that counted.
 */

/** A new job's row: queued, due now. */
export function jobRow(job: JobPayload, now: number): Insertable<Database['jobs']> {
  return { task_id: job.taskId, kind: job.kind, state: 'queued', attempts: 0, worker_id: null, lease_until: 0, available_at: now, created_at: now };
}

/** A job row's insert, a no-op when the task has one: insertJob's statement, through Kysely or compiled once for a hot path. */
export function insertJobQuery(db: Kysely<Database>, row: Insertable<Database['jobs']>) {
  return db
    .insertInto('jobs')
    .values(row)
    .onConflict((oc) => oc.column('task_id').doNothing());
}

/** Writes a job row; a second enqueue of the same task changes nothing (task_id is unique). */
export async function insertJob(db: Kysely<Database>, job: JobPayload, now: number): Promise<void> {
  await insertJobQuery(db, jobRow(job, now)).execute();
}

/** What a claim reads of its candidate. */
const CANDIDATE = ['seq', 'task_id', 'kind', 'attempts', 'state', 'lease_until'] as const;
type CandidateRow = Pick<Selectable<Database['jobs']>, (typeof CANDIDATE)[number]>;

/**
 * The SQLite claim's candidates (JobRows.candidatesByIndex), compiled once per set of kinds (at most 31: the
 * consumer asks for the kinds with a free slot): building and compiling ten arms through Kysely cost more than
 * running them. LIMIT as a literal: SQLite (STAT4) re-prepares a statement whose LIMIT is bound at every run
 * (110 us instead of 11 here). `now` is a slot (compileOnce).
 */
export function candidatesByIndexQuery(db: Kysely<Database>, kinds: readonly TaskKind[]) {
  const now = slot<number>('now');
  const arms = kinds.flatMap((kind) => [
    db.selectFrom('jobs').select(CANDIDATE).where('kind', '=', kind).where('state', '=', 'queued').where('available_at', '<=', now).orderBy('seq').limit(sql.lit(1)),
    db.selectFrom('jobs').select(CANDIDATE).where('kind', '=', kind).where('state', '=', 'active').where('lease_until', '<', now).orderBy('seq').limit(sql.lit(1)),
  ]);
  // Each arm inside a subquery of its own: SQLite takes ORDER BY and LIMIT only at the end of a compound select.
  const [first, ...rest] = arms.map((arm, i) => db.selectFrom(arm.as(`arm${i}`)).selectAll());
  return rest.reduce((all, arm) => all.unionAll(arm), first!);
}

export class JobRows {
  /** Postgres claims with FOR UPDATE SKIP LOCKED; SQLite (one writer at a time) with an optimistic guarded UPDATE. */
  private readonly skipLocked: boolean;
  /** candidatesByIndex's statement per set of kinds. */
  private readonly byIndex = new Map<string, CompiledOnce>();

  constructor(
    private readonly db: Kysely<Database>,
    private readonly now: () => number,
  ) {
    this.skipLocked = db.getExecutor().adapter instanceof PostgresAdapter;
  }

  /**
   * Takes the oldest deliverable job of these kinds: queued and due, or active with an expired
   * lease (its consumer died; that delivery counted, so this one is the next attempt).
   */
  async claim(kinds: readonly TaskKind[], token: string, leaseMs: (kind: TaskKind) => number): Promise<ClaimedRow | null> {
    return this.skipLocked ? this.claimSkipLocked(kinds, token, leaseMs) : this.claimOptimistic(kinds, token, leaseMs);
  }

  private candidates(db: Kysely<Database>, kinds: readonly TaskKind[], now: number) {
    return db
      .selectFrom('jobs')
      .select(CANDIDATE)
      .where('kind', 'in', [...kinds])
      .where((eb) =>
        eb.or([
          eb.and([eb('state', '=', 'queued'), eb('available_at', '<=', now)]),
          eb.and([eb('state', '=', 'active'), eb('lease_until', '<', now)]),
        ]),
      )
      .orderBy('seq')
      .limit(1);
  }

  /**
   * candidates()'s rows, one index walk per kind and state: (kind, state, seq) in jobs_pick, in seq order, first
   * match; the claim takes the lowest seq of them. SQLite answered candidates()'s OR by reading every job of the
   * kinds asked and sorting them (a temporary b-tree): 1.1-1.6 ms per claim behind a backlog of 9,000 TTS jobs,
   * on the worker's event loop, which in ROLE=all is also the API's; this is 8 us whatever the backlog. No
   * ORDER BY over the union: SQLite then sorts the arms' rows again instead of reading each arm's one row.
   */
  private candidatesByIndex(kinds: readonly TaskKind[], now: number): Promise<CandidateRow[]> {
    const key = kinds.join(',');
    let query = this.byIndex.get(key);
    if (!query) {
      query = compileOnce(candidatesByIndexQuery(this.db, kinds));
      this.byIndex.set(key, query);
    }
    return this.db.executeQuery<CandidateRow>(CompiledQuery.raw(query.sql, query.bind({ now }))).then((r) => r.rows);
  }

  private async claimOptimistic(kinds: readonly TaskKind[], token: string, leaseMs: (kind: TaskKind) => number): Promise<ClaimedRow | null> {
    if (kinds.length === 0) return null;
    for (let tries = 0; tries < 5; tries++) {
      const now = this.now();
      const found = await this.candidatesByIndex(kinds, now);
      const c = found.reduce<CandidateRow | undefined>((min, row) => (min === undefined || Number(row.seq) < Number(min.seq) ? row : min), undefined);
      if (!c) return null;
      const kind = c.kind as TaskKind;
      // Only one claimer can match the row as it was read; the loser picks another candidate.
      const res = await this.db
        .updateTable('jobs')
        .set({ state: 'active', worker_id: token, lease_until: now + leaseMs(kind), attempts: Number(c.attempts) + 1 })
        .where('seq', '=', c.seq)
        .where('state', '=', c.state)
        .where('attempts', '=', c.attempts)
        .where('lease_until', '=', c.lease_until)
        .executeTakeFirst();
      if (Number(res.numUpdatedRows) === 1) return { taskId: c.task_id, kind, token, attempt: Number(c.attempts) + 1 };
    }
    return null;
  }

  private async claimSkipLocked(kinds: readonly TaskKind[], token: string, leaseMs: (kind: TaskKind) => number): Promise<ClaimedRow | null> {
    return this.db.transaction().execute(async (trx) => {
      const now = this.now();
      // Rows another claimer has locked are skipped rather than waited for: no claimer ever blocks.
      const c = await this.candidates(trx, kinds, now).forUpdate().skipLocked().executeTakeFirst();
      if (!c) return null;
      const kind = c.kind as TaskKind;
      await trx
        .updateTable('jobs')
        .set({ state: 'active', worker_id: token, lease_until: now + leaseMs(kind), attempts: Number(c.attempts) + 1 })
        .where('seq', '=', c.seq)
        .execute();
      return { taskId: c.task_id, kind, token, attempt: Number(c.attempts) + 1 };
    });
  }

  /** Extends the lease; false when the job is no longer held under this token. */
  async heartbeat(row: ClaimedRow, leaseMs: number): Promise<boolean> {
    const res = await this.db
      .updateTable('jobs')
      .set({ lease_until: this.now() + leaseMs })
      .where('task_id', '=', row.taskId)
      .where('worker_id', '=', row.token)
      .where('state', '=', 'active')
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  /** Done, finally failed or given up: the task store holds the outcome, the queue forgets the job. */
  async remove(row: ClaimedRow): Promise<void> {
    await this.db.deleteFrom('jobs').where('task_id', '=', row.taskId).where('worker_id', '=', row.token).execute();
  }

  /** Counted failure: waits delayMs, keeping its place (seq) among the waiting jobs. */
  async retryLater(row: ClaimedRow, delayMs: number): Promise<void> {
    await this.db
      .updateTable('jobs')
      .set({ state: 'queued', worker_id: null, lease_until: 0, available_at: this.now() + delayMs })
      .where('task_id', '=', row.taskId)
      .where('worker_id', '=', row.token)
      .execute();
  }

  /** Shutdown: back to the queue at once and at its old place, the delivery not counted. */
  async handBack(row: ClaimedRow): Promise<void> {
    await this.db
      .updateTable('jobs')
      .set((eb) => ({ state: 'queued', worker_id: null, lease_until: 0, available_at: this.now(), attempts: eb('attempts', '-', 1) }))
      .where('task_id', '=', row.taskId)
      .where('worker_id', '=', row.token)
      .execute();
  }

  async position(taskId: string): Promise<number | null> {
    return positionOf(await positionQuery(this.db, taskId).executeTakeFirst());
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
}

/** What positionQuery reads: the job's state and the queued jobs of its kind ahead of it. */
export interface JobPosition {
  state: string;
  ahead: number | null;
}

/**
 * A job's state and the queued jobs of its kind ahead of it: one statement, not a read of the job then a
 * count, as it runs on every poll of a waiting task (JobRows.position, or compiled once for a hot path).
 */
export function positionQuery(db: Kysely<Database>, taskId: string) {
  return db
    .selectFrom('jobs as j')
    .where('j.task_id', '=', taskId)
    .select((eb) => [
      'j.state',
      eb
        .selectFrom('jobs as a')
        .select(eb.fn.countAll<number>().as('n'))
        .whereRef('a.kind', '=', 'j.kind')
        .where('a.state', '=', 'queued')
        .whereRef('a.seq', '<', 'j.seq')
        .as('ahead'),
    ]);
}

/** 0 for a job being worked on, else 1 + the queued jobs of its kind ahead of it; null without a job. */
export function positionOf(job: { state: string; ahead: number | string | bigint | null } | undefined): number | null {
  if (!job) return null;
  if (job.state === 'active') return 0;
  return Number(job.ahead) + 1;
}
