import type pg from 'pg';
import type { Compilable, Kysely } from 'kysely';
import type { Database } from '../sql/schema.js';
import { compileOnce, slot, type CompiledOnce } from '../sql/compiled-once.js';
import { taskByIdQuery, type TaskRow } from '../sql/task-store.js';
import { positionQuery, type JobPosition } from '../sql/queue-rows.js';

/** A statement compiled once and run on the pool under its name, so each connection parses and plans it once. */
class Named {
  private readonly sql: string;
  private readonly bind: CompiledOnce['bind'];

  constructor(
    private readonly name: string,
    query: Compilable,
  ) {
    ({ sql: this.sql, bind: this.bind } = compileOnce(query));
  }

  async first<R extends pg.QueryResultRow>(pool: pg.Pool, values: Record<string, unknown>): Promise<R | undefined> {
    const res = await pool.query<R>({ name: this.name, text: this.sql, values: this.bind(values) });
    return res.rows[0];
  }
}

/**
 * The statements on every poll (a task by id; a waiting task's place in the SQL queue) on PostgreSQL, run
 * on the pool under Kysely as named prepared statements: pg prepares each once per pooled connection and
 * then only binds and executes it, where through Kysely each poll built and compiled its query and sent
 * it unnamed, for the server to parse and plan again. The SQL is Kysely's, compiled once from the same
 * builders the Kysely path runs (taskByIdQuery, positionQuery), and the rows come from the same pool with
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
    // The names are per connection, and the pool holds only Soundry's statements: a fixed prefix suffices.
    this.taskById = new Named('soundry_task_by_id', taskByIdQuery(db, slot('id')));
    this.position = new Named('soundry_job_position', positionQuery(db, slot('taskId')));
  }

  readonly task = (id: string): Promise<TaskRow | undefined> => this.taskById.first<TaskRow>(this.pool, { id });

  readonly jobPosition = (taskId: string): Promise<JobPosition | undefined> => this.position.first<JobPosition>(this.pool, { taskId });
}
