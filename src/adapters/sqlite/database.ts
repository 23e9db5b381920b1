import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { StartupRefusal } from '../../domain/errors.js';
import type { Database } from '../sql/schema.js';
import { migrateToLatest } from '../sql/migrations.js';
import { writeTransaction } from '../sql/dialect.js';

export interface SqliteOptions {
  /**
   * How often committed transactions are copied from the WAL into the database file (a PASSIVE
   * checkpoint: it never waits for readers, so it never blocks the event loop). 0: only SQLite's own
   * automatic checkpoint, at 1000 pages (4 MB), which a small, busy database may never reach.
   */
  checkpointIntervalMs?: number;
  /**
   * `PRAGMA quick_check` runs at every open of a file up to this size (about 1 ms per MiB: 120 ms for
   * 100,000 tasks, bench/sqlite-check.ts); a bigger file is checked only when its last user did not
   * close it (a `-wal` file is left).
   */
  quickCheckMaxBytes?: number;
}

const DEFAULT_CHECKPOINT_MS = 30_000;
const DEFAULT_QUICK_CHECK_MAX_BYTES = 1024 ** 3;

/**
 * Written beside the database once its schema exists. A missing (or schema-less) database next to
 * it means the data was lost, not that this is a first start: see openSqlite. A hidden name outside
 * the database's own glob: it was `soundry.db.created`, and the usual `rm soundry.db*` (the file with
 * its -wal and -shm) took the marker too, so the server started on an empty database without a word.
 */
export function creationMarkerPath(path: string): string {
  return join(dirname(path), `.${basename(path)}.created`);
}

/** Where releases before the hidden name wrote the marker; still honoured, and moved to the new name. */
function legacyMarkerPath(path: string): string {
  return `${path}.created`;
}

/**
 * Opens (and migrates) the embedded database. WAL lets the CLI and the server share the file.
 *
 * Refuses (StartupRefusal) rather than silently starting empty when the file is missing, or has lost
 * its schema, while the creation marker beside it says it existed; and when the file fails
 * `PRAGMA quick_check` or is not a database at all.
 */
export async function openSqlite(path: string, opts: SqliteOptions = {}): Promise<Kysely<Database>> {
  return (await openSqliteHandles(path, opts)).db;
}

/**
 * openSqlite, also handing out the connection under Kysely: the adapter's synchronous hot statements
 * (SqliteTaskCreates) run on it while they hold Kysely's connection, so nothing interleaves.
 */
export async function openSqliteHandles(path: string, opts: SqliteOptions = {}): Promise<{ db: Kysely<Database>; raw: BetterSqlite3.Database }> {
  mkdirSync(dirname(path), { recursive: true });
  // Marker first, then the file: the marker is written after the file is made, so a concurrent first
  // start can never be seen as "marker without file".
  const legacy = legacyMarkerPath(path);
  const marker = existsSync(legacy) && !existsSync(creationMarkerPath(path)) ? legacy : creationMarkerPath(path);
  const markerExists = existsSync(marker);
  const existed = existsSync(path);
  const leftWal = existsSync(`${path}-wal`);
  if (markerExists && !existed) {
    throw new StartupRefusal(
      `The database ${path} is missing, but ${marker} shows that it existed (${markerNote(marker)}). ` +
        `Soundry will not start with an empty database in its place: restore ${basename(path)} from a backup. ` +
        `To start over with an empty database on purpose, delete ${marker}.`,
    );
  }
  const sqlite = new BetterSqlite3(path);
  try {
    try {
      await enableWal(sqlite);
      if (existed) checkIntegrity(sqlite, path, leftWal, opts.quickCheckMaxBytes ?? DEFAULT_QUICK_CHECK_MAX_BYTES);
    } catch (err) {
      throw asCorruption(err, path);
    }
    if (markerExists && !hasSchema(sqlite)) {
      throw new StartupRefusal(
        `The database ${path} exists but holds no data, while ${marker} shows it was created and used (${markerNote(marker)}): ` +
          `its contents were probably lost (e.g. the ${basename(path)}-wal file was deleted). Restore ${basename(path)} from a backup. ` +
          `To start over with an empty database on purpose, delete ${marker}.`,
      );
    }
  } catch (err) {
    sqlite.close();
    throw err;
  }
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('busy_timeout = 5000');
  sqlite.pragma('foreign_keys = ON');
  const db = new Kysely<Database>({
    dialect: new SqliteDialect({ database: withMaintenance(sqlite, opts.checkpointIntervalMs ?? DEFAULT_CHECKPOINT_MS) }),
  });
  // Kysely takes no lock for migrations on SQLite. Under BEGIN IMMEDIATE, a second process starting
  // at the same moment waits, then finds the schema done; and a failed migration leaves nothing half made.
  try {
    await writeTransaction(db, migrateToLatest);
    // The schema goes into the database file now, not only into the WAL, before the marker says it exists.
    checkpoint(sqlite, 'PASSIVE');
    if (!markerExists) writeMarker(marker, path);
    else if (marker === legacy) moveMarker(legacy, creationMarkerPath(path));
  } catch (err) {
    await db.destroy();
    throw err;
  }
  return { db, raw: sqlite };
}

function markerNote(marker: string): string {
  try {
    const created = /created (\S+)/.exec(readFileSync(marker, 'utf8'))?.[1];
    return created ? `created ${created}` : 'its content is unreadable';
  } catch {
    return 'its content is unreadable';
  }
}

function writeMarker(marker: string, path: string): void {
  const text =
    `${basename(path)} created ${new Date().toISOString()}\n` +
    `Soundry refuses to start while this file exists and ${basename(path)} is missing or empty, so that a lost\n` +
    `database is noticed instead of replaced by an empty one. Delete this file only to start over on purpose.\n`;
  try {
    writeFileSync(marker, text, { flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err; // another process starting at once wrote it
  }
}

/** The legacy marker's content (its creation date) under the new name; another process may have moved it first. */
function moveMarker(from: string, to: string): void {
  try {
    renameSync(from, to);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}

function hasSchema(sqlite: BetterSqlite3.Database): boolean {
  return sqlite.prepare("select 1 from sqlite_master where type = 'table' and name = 'kysely_migration'").get() !== undefined;
}

/**
 * `quick_check` reads every page once (O(size)); it skips only the index-to-table cross checks of
 * integrity_check, which costs about twice as much. Above `maxBytes` it runs only after an unclean stop.
 */
function checkIntegrity(sqlite: BetterSqlite3.Database, path: string, leftWal: boolean, maxBytes: number): void {
  if (!leftWal && statSync(path).size > maxBytes) return;
  const rows = sqlite.pragma('quick_check(5)') as Array<{ quick_check: string }>;
  const problems = rows.map((r) => r.quick_check).filter((r) => r !== 'ok');
  if (problems.length) throw new StartupRefusal(corruptionMessage(path, problems.join('; ')));
}

function corruptionMessage(path: string, detail: string): string {
  return (
    `The database ${path} is damaged (${detail}). Soundry will not start on it: restore ${basename(path)} ` +
    `from a backup (the sqlite3 shell's ".recover" may save what is left of it).`
  );
}

function asCorruption(err: unknown, path: string): unknown {
  const code = err instanceof BetterSqlite3.SqliteError ? err.code : '';
  if (code.startsWith('SQLITE_CORRUPT') || code === 'SQLITE_NOTADB') return new StartupRefusal(corruptionMessage(path, err instanceof Error ? err.message : code));
  return err;
}

/** A checkpoint that never throws: a failed one is retried at the next tick or at close. */
function checkpoint(sqlite: BetterSqlite3.Database, mode: 'PASSIVE' | 'TRUNCATE'): void {
  if (!sqlite.open || sqlite.inTransaction) return;
  try {
    sqlite.pragma(`wal_checkpoint(${mode})`);
  } catch {
    /* busy or read-only: nothing is lost, the WAL still holds it */
  }
}

/**
 * Switching a new file to WAL fails at once with SQLITE_BUSY when another process is opening it
 * at the same moment (API and worker starting together on a fresh DATA_DIR): SQLite does not call
 * the busy handler there. Seen in the multi-process store tests; a short retry settles it.
 */
async function enableWal(sqlite: BetterSqlite3.Database, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      sqlite.pragma('journal_mode = WAL');
      return;
    } catch (err) {
      if (!(err instanceof BetterSqlite3.SqliteError && err.code === 'SQLITE_BUSY') || Date.now() > deadline) throw err;
      await sleep(10 + Math.random() * 40);
    }
  }
}

/**
 * The connection Kysely sees: statements cached by SQL text, a periodic checkpoint, and a full one at
 * close (TRUNCATE: the WAL is emptied, the database file alone holds everything).
 *
 * Kysely prepares a statement for every query; with better-sqlite3, preparing costs about as much
 * as running (profiled: a third of a query's CPU). Statements are reusable, so keep them by SQL
 * text. Kysely's queries have few distinct shapes (parameters are bound, not inlined), so the map
 * stays small; the bound is a guard against an unexpected stream of distinct SQL.
 */
function withMaintenance(sqlite: BetterSqlite3.Database, checkpointMs: number, max = 1000) {
  const statements = new Map<string, BetterSqlite3.Statement>();
  const timer = checkpointMs > 0 ? setInterval(() => checkpoint(sqlite, 'PASSIVE'), checkpointMs).unref() : null;
  return {
    close: () => {
      if (timer) clearInterval(timer);
      checkpoint(sqlite, 'TRUNCATE');
      sqlite.close();
    },
    prepare(sql: string) {
      let stmt = statements.get(sql);
      if (!stmt) {
        if (statements.size >= max) statements.clear();
        stmt = sqlite.prepare(sql);
        statements.set(sql, stmt);
      }
      return stmt;
    },
  };
}
