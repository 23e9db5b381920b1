/**
 * What bench/sqlite-create-cost.ts and bench/sqlite-wal-growth.ts share: SqliteTaskCreates on a fresh embedded
 * database with 200 keys, and one batch of TTS creates written the way the WriteBatcher writes them.
 */
import { randomUUID } from 'node:crypto';
import type BetterSqlite3 from 'better-sqlite3';
import type { Kysely } from 'kysely';
import { SqliteTaskCreates } from '../src/adapters/sqlite/task-creates.js';
import { SqlAccountStore } from '../src/adapters/sql/account-store.js';
import type { Database } from '../src/adapters/sql/schema.js';
import { issueApiKey } from '../src/services/auth.js';
import { newTaskId } from '../src/domain/task.js';
import type { NewTask } from '../src/ports/task-store.js';
import type { ApiKey } from '../src/ports/accounts.js';

export async function benchCreates(db: Kysely<Database>, raw: BetterSqlite3.Database): Promise<(batch: number) => Promise<void>> {
  const accounts = new SqlAccountStore(db);
  const keys: ApiKey[] = [];
  for (let i = 0; i < 200; i++) keys.push((await issueApiKey(accounts, { credits: 1e9, rateLimit: 1e9, concurrency: 1e9 })).key);
  const creates = new SqliteTaskCreates(db, raw, Date.now);
  const params = { text: 'Benchmark sentence.', voice_id: 1001, language: 'en', emotion: 0, speed: 1 };
  let next = 0;
  return async (batch) => {
    const items: Array<{ task: NewTask; limit: number }> = [];
    for (let j = 0; j < batch; j++) {
      const key = keys[next++ % keys.length]!;
      const now = Date.now();
      items.push({ task: { id: newTaskId(now, randomUUID().replace(/-/g, '')), kind: 'tts', accountId: key.accountId, apiKeyId: key.id, params, createdAt: now, expiresAt: now + 3_600_000, hold: 1 }, limit: 1e9 });
    }
    await creates.writeBatch(items);
  };
}
