/**
 * One "node" for the multi-process store tests: opens the database as a Soundry process would,
 * then waits for "go" on stdin so that every process starts the work at the same moment.
 *
 *   node --import tsx test/adapters/store-child.ts <sqlite|postgres> <path or url> migrate
 *   node --import tsx test/adapters/store-child.ts <sqlite|postgres> <path or url> create <keyId> <accountId> <limit> <n>
 *
 * Prints "ready" when loaded, then one JSON line with the outcome.
 */
import { createInterface } from 'node:readline';
import { randomUUID } from 'node:crypto';
import { openPostgres } from '../../src/adapters/postgres/database.js';
import { openSqlite } from '../../src/adapters/sqlite/database.js';
import type { Kysely } from 'kysely';
import type { Database } from '../../src/adapters/sql/schema.js';
import { SqlTaskStore } from '../../src/adapters/sql/task-store.js';

const [dialect, location, mode, ...args] = process.argv.slice(2);

async function open(): Promise<Kysely<Database>> {
  if (dialect === 'postgres') return openPostgres(location!);
  if (dialect === 'sqlite') return openSqlite(location!);
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
  const [keyId, accountId, limit, n] = args;
  const db = await open();
  try {
    const tasks = new SqlTaskStore(db);
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
