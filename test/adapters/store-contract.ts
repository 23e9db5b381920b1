/**
 * The adapter contract of the SQL task and account stores: the same tests for every database
 * they run on (in the spirit of BullMQ's adapter conformance tests). A backend test file
 * (store-sqlite.test.ts, store-postgres.test.ts) only says how to make and open a database.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe } from 'vitest';
import type { SqlDialect } from '../../src/adapters/sql/dialect.js';
import type { Database } from '../../src/adapters/sql/schema.js';
import { SqlAccountStore } from '../../src/adapters/sql/account-store.js';
import { SqlTaskStore, type SqlTaskStoreOptions } from '../../src/adapters/sql/task-store.js';
import type { NewTask } from '../../src/ports/task-store.js';
import { hashApiKey } from '../../src/services/auth.js';
import { taskStoreContract } from './contract/task-store.js';
import { accountStoreContract } from './contract/account-store.js';
import { concurrencyContract } from './contract/concurrency.js';
import { keyUnfinishedContract } from './contract/key-unfinished.js';
import { holdsContract } from './contract/holds.js';

export interface StoreBackend {
  dialect: SqlDialect;
  /** A new, empty database: a file path or a postgres:// URL. */
  createDatabase(): Promise<string>;
  /** Opens (and migrates) it as Soundry does. */
  open(location: string): Promise<Kysely<Database>>;
  /** Removes every database this backend made. */
  cleanup(): Promise<void>;
  /**
   * Opens it as the server composes the task store, with its hot paths off Kysely (SQLite: get() through
   * a second, read-only connection and creates by SqliteTaskCreates; PostgreSQL: get() and creates as named
   * prepared statements on the pool). Unset: the store runs everything through Kysely.
   */
  openHotPaths?(location: string): Promise<HotPaths>;
}

/** A database opened with the task store's hot paths off Kysely; `close` ends what they opened beside db. */
export interface HotPaths {
  db: Kysely<Database>;
  options: Pick<SqlTaskStoreOptions, 'readQueried' | 'createBatch' | 'createOne'>;
  close(): void;
}

/** What each test gets: one migrated database per backend file, emptied before every test. */
export interface StoreFixture {
  backend: StoreBackend;
  location: string;
  db: Kysely<Database>;
  tasks: SqlTaskStore;
  accounts: SqlAccountStore;
  /** An account with `credits` and one enabled key on it. */
  seed(opts?: { credits?: number }): Promise<{ accountId: string; keyId: string }>;
  /** A task to create; ids are fresh, times are now unless given. */
  task(owner: { accountId: string; keyId: string }, over?: Partial<NewTask>): NewTask;
}

export function defineStoreContract(backend: StoreBackend): void {
  describe(`SQL stores on ${backend.dialect}${backend.openHotPaths ? ', hot paths off Kysely' : ''}`, () => {
    let fx: StoreFixture | undefined;
    let hot: HotPaths | undefined;
    const use = (): StoreFixture => {
      if (!fx) throw new Error('the store fixture is not set up (beforeAll failed?)');
      return fx;
    };

    beforeAll(async () => {
      const location = await backend.createDatabase();
      hot = backend.openHotPaths ? await backend.openHotPaths(location) : undefined;
      const db = hot ? hot.db : await backend.open(location);
      const accounts = new SqlAccountStore(db);
      fx = {
        backend,
        location,
        db,
        tasks: new SqlTaskStore(db, hot?.options),
        accounts,
        async seed(opts = {}) {
          const accountId = `acct_${randomUUID()}`;
          const keyId = `key_${randomUUID()}`;
          await accounts.createAccount(accountId, opts.credits ?? 100);
          await accounts.createKey({ id: keyId, accountId, hash: hashApiKey(keyId), prefix: keyId.slice(0, 11), enabled: true, rateLimit: null, concurrency: null });
          return { accountId, keyId };
        },
        task(owner, over = {}) {
          const now = Date.now();
          return { id: randomUUID(), kind: 'tts', accountId: owner.accountId, apiKeyId: owner.keyId, params: {}, createdAt: now, expiresAt: now + 3_600_000, ...over };
        },
      };
    });

    beforeEach(async () => {
      const { db } = use();
      // Children before parents (api_keys references accounts).
      for (const table of ['jobs', 'ledger', 'tasks', 'api_keys', 'accounts'] as const) await db.deleteFrom(table).execute();
    });

    afterAll(async () => {
      hot?.close();
      await fx?.db.destroy();
      await backend.cleanup();
    });

    taskStoreContract(use);
    accountStoreContract(use);
    concurrencyContract(use);
    keyUnfinishedContract(use);
    holdsContract(use);
  });
}
