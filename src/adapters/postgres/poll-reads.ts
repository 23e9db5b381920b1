import type pg from 'pg';
import type { Kysely } from 'kysely';
import type { Database } from '../sql/schema.js';
import { slot } from '../sql/compiled-once.js';
import { Named } from './named.js';
import { queriedByIdQuery, type QueriedRow } from '../sql/task-store.js';
import { positionQuery, type JobPosition } from '../sql/queue-rows.js';

/**
 * The statements on every poll (a task by id; a waiting task's place in the SQL queue) on PostgreSQL, run
 * on the pool under Kysely as named prepared statements: pg prepares each once per pooled connection and
 * then only binds and executes it, where through Kysely each poll built and compiled its query and sent
 * it unnamed, for the server to parse and plan again. The SQL is Kysely's, compiled once from the same
 * builders the Kysely path runs (queriedByIdQuery, positionQuery), and the rows come from the same pool with
 * its int8 parsing, so they have the same shape as through Kysely. Named statements need a session of
 * their own per connection: a pooler in transaction mode in front of PostgreSQL must keep prepared
 * statements per client (PgBouncer 1.21+ max_prepared_statements) for this to work.
 */
export class PostgresPollReads {
  private readonly taskById: Named;
  private readonly position: Named;

  constructor(
    db: Kysely<Database>,
    private readonly pool: pg.Pool,
  ) {
    // A new name whenever the statement's SQL changes: a pooler keeping prepared statements per client must not run the old one.
    this.taskById = new Named('soundry_task_queried_by_id', queriedByIdQuery(db, slot('id')));
    this.position = new Named('soundry_job_position', positionQuery(db, slot('taskId')));
  }

  /** The task row without its params (a query's read). */
  readonly queried = (id: string): Promise<QueriedRow | undefined> => this.taskById.first<QueriedRow>(this.pool, { id });

  readonly jobPosition = (taskId: string): Promise<JobPosition | undefined> => this.position.first<JobPosition>(this.pool, { taskId });
}
