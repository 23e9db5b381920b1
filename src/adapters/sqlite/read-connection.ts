import BetterSqlite3 from 'better-sqlite3';
import type { Selectable } from 'kysely';
import type { Database } from '../sql/schema.js';

type TaskRow = Selectable<Database['tasks']>;

/**
 * A second, read-only connection to the embedded database for the statements on every poll (a task
 * by id, a waiting task's place in the queue). They run synchronously as prepared statements:
 * through Kysely each one was built, compiled and passed through the single connection's async
 * mutex, which cost more CPU than SQLite's own work (bench/results/http.md). A separate connection
 * because Kysely's transactions hold the main one across awaits: a read on it in between would see
 * a batch of creates that has not committed yet. In WAL mode this one sees every commit at once and
 * never blocks or is blocked by the writer.
 */
export class SqliteReadConnection {
  private readonly db: BetterSqlite3.Database;
  private readonly taskById: BetterSqlite3.Statement<[string], TaskRow>;
  private readonly position: BetterSqlite3.Statement<[string], { state: string; ahead: number }>;

  /** `path`: a database openSqlite already opened (and migrated, in WAL mode). */
  constructor(path: string) {
    this.db = new BetterSqlite3(path, { readonly: true, fileMustExist: true });
    this.db.pragma('busy_timeout = 5000');
    this.taskById = this.db.prepare<[string], TaskRow>('select * from tasks where id = ?');
    // The same statement as JobRows.position (one statement: it runs on every poll of a waiting task).
    this.position = this.db.prepare<[string], { state: string; ahead: number }>(
      "select j.state, (select count(*) from jobs as a where a.kind = j.kind and a.state = 'queued' and a.seq < j.seq) as ahead from jobs as j where j.task_id = ?",
    );
  }

  task(id: string): TaskRow | undefined {
    return this.taskById.get(id);
  }

  jobPosition(taskId: string): { state: string; ahead: number } | undefined {
    return this.position.get(taskId);
  }

  close(): void {
    this.db.close();
  }
}
