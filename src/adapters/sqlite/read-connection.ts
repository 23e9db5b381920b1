import BetterSqlite3 from 'better-sqlite3';
import type { QueriedRow } from '../sql/task-store.js';

/**
 * The columns a query reads of a task row (all but its params: QueriedTask), in the order taskById selects
 * them, and the row rebuilt from those values.
 * The statement returns arrays (better-sqlite3's raw mode): building each row as an object from C++,
 * one property at a time, was a third of the statement's cost on every poll (bench/results/http.md); a
 * literal of fixed shape built here costs a fraction of that.
 */
const COLUMNS = ['id', 'kind', 'account_id', 'api_key_id', 'state', 'result', 'error', 'engine', 'progress', 'charged', 'created_at', 'updated_at', 'started_at', 'finished_at', 'expires_at'] as const;
type Values = { -readonly [I in keyof typeof COLUMNS]: (typeof COLUMNS)[I] extends keyof QueriedRow ? QueriedRow[(typeof COLUMNS)[I]] : never };
// Every column of the row, each once: a column added to the schema must be added here (compile error otherwise).
const _everyColumn: (typeof COLUMNS)[number] extends keyof QueriedRow ? (keyof QueriedRow extends (typeof COLUMNS)[number] ? true : never) : never = true;

function rowOf(v: Values): QueriedRow {
  return {
    id: v[0],
    kind: v[1],
    account_id: v[2],
    api_key_id: v[3],
    state: v[4],
    result: v[5],
    error: v[6],
    engine: v[7],
    progress: v[8],
    charged: v[9],
    created_at: v[10],
    updated_at: v[11],
    started_at: v[12],
    finished_at: v[13],
    expires_at: v[14],
  };
}

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
  private readonly taskById: BetterSqlite3.Statement<[string], Values>;
  private readonly position: BetterSqlite3.Statement<[string], { state: string; ahead: number }>;

  /** `path`: a database openSqlite already opened (and migrated, in WAL mode). */
  constructor(path: string) {
    this.db = new BetterSqlite3(path, { readonly: true, fileMustExist: true });
    this.db.pragma('busy_timeout = 5000');
    this.taskById = this.db.prepare<[string], Values>(`select ${COLUMNS.join(', ')} from tasks where id = ?`).raw(true);
    // The same statement as JobRows.position (one statement: it runs on every poll of a waiting task).
    this.position = this.db.prepare<[string], { state: string; ahead: number }>(
      "select j.state, (select count(*) from jobs as a where a.kind = j.kind and a.state = 'queued' and a.seq < j.seq) as ahead from jobs as j where j.task_id = ?",
    );
  }

  /** The task row without its params (a query's read). */
  queried(id: string): QueriedRow | undefined {
    const values = this.taskById.get(id);
    return values === undefined ? undefined : rowOf(values);
  }

  jobPosition(taskId: string): { state: string; ahead: number } | undefined {
    return this.position.get(taskId);
  }

  close(): void {
    this.db.close();
  }
}
