/**
 * One "node" for the multi-process store tests: opens the database as a Soundry process would,
 * then waits for "go" on stdin so that every process starts the work at the same moment.
 *
 *   node --import tsx test/adapters/store-child.ts <sqlite|postgres> <path or url> migrate
 *   node --import tsx test/adapters/store-child.ts <sqlite|postgres> <path or url> create <keyId> <accountId> <limit> <n> [hot]
 *
 * `hot`: creates off Kysely as the server composes them with the SQL queue (SqliteTaskCreates,
 * PostgresTaskCreates), each writing its job row too.
 *
 * Prints "ready" when loaded, then one JSON line with the outcome.
 */
import { createInterface } from 'node:readline';
import { randomUUID } from 'node:crypto';
import { openPostgres, openPostgresHandles } from '../../src/adapters/postgres/database.js';
import { PostgresTaskCreates } from '../../src/adapters/postgres/task-creates.js';
import { openSqlite, openSqliteHandles } from '../../src/adapters/sqlite/database.js';
import { SqliteTaskCreates } from '../../src/adapters/sqlite/task-creates.js';
import type { Kysely } from 'kysely';
import type { Database } from '../../src/adapters/sql/schema.js';
import { SqlTaskStore, type SqlTaskStoreOptions } from '../../src/adapters/sql/task-store.js';

const [dialect, location, mode, ...args] = process.argv.slice(2);

async function open(): Promise<Kysely<Database>> {
  if (dialect === 'postgres') return openPostgres(location!);
  if (dialect === 'sqlite') return openSqlite(location!);
  throw new Error(`unknown dialect ${dialect}`);
}

/** The database, and the store's create path as the server composes it with the SQL queue. */
async function openHot(): Promise<{ db: Kysely<Database>; options: SqlTaskStoreOptions }> {
  if (dialect === 'postgres') {
    const { db, pool } = await openPostgresHandles(location!);
    return { db, options: { createOne: new PostgresTaskCreates(db, pool, Date.now).createOne } };
  }
  if (dialect === 'sqlite') {
    const { db, raw } = await openSqliteHandles(location!);
    return { db, options: { createBatch: new SqliteTaskCreates(db, raw, Date.now).writeBatch } };
  }
  throw new Error(`unknown dialect ${dialect}`);
}

async function migrate(): Promise<unknown> {
  const db = await open();
  try {
    const applied = await db.withTables<{ kysely_migration: { name: string } }>().selectFrom('kysely_migration').select('name').execute();
    return { applied: applied.map((r) => r.name) };
  } finally {
    await db.destroy();
  }
}

async function create(): Promise<unknown> {
  const [keyId, accountId, limit, n, path] = args;
  const { db, options } = path === 'hot' ? await openHot() : { db: await open(), options: {} };
  try {
    const tasks = new SqlTaskStore(db, options);
    const now = Date.now();
    const outcomes = await Promise.all(
      Array.from({ length: Number(n) }, () =>
        tasks.createWithinLimit(
          { id: randomUUID(), kind: 'tts', accountId: accountId!, apiKeyId: keyId!, params: {}, createdAt: now, expiresAt: now + 60_000 },
          Number(limit),
        ),
      ),
    );
    return { created: outcomes.filter((o) => o.created).length, refused: outcomes.filter((o) => !o.created).length };
  } finally {
    await db.destroy();
  }
}

async function main(): Promise<void> {
  process.stdout.write('ready\n');
  const lines = createInterface({ input: process.stdin });
  for await (const line of lines) if (line.trim() === 'go') break;
  lines.close();
  const result = mode === 'migrate' ? await migrate() : mode === 'create' ? await create() : Promise.reject(new Error(`unknown mode ${mode}`));
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

main().catch((err: unknown) => {
  // The stack goes into the answer, so a failing test shows where a child failed.
  process.stdout.write(`${JSON.stringify({ error: err instanceof Error ? err.stack : String(err) })}\n`);
  process.exitCode = 1;
});
