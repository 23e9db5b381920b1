import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqlite } from '../../src/adapters/sqlite/database.js';
import { SqlAccountStore } from '../../src/adapters/sql/account-store.js';
import { issueApiKey } from '../../src/services/auth.js';
import { freePort } from './app.js';

const API = '/audio/api/v1/api-keys';

/**
 * What a test of a server process (`ServerProcesses`) prepares before starting it: a data folder with its
 * embedded database open beside the server, a key with credits on it, a free port, and a JSON POST to the
 * API as that key. `close()` closes the database and removes the folder.
 */
export async function serverData(prefix: string, key: { credits?: number; rateLimit?: number } = {}) {
  const dataDir = await mkdtemp(join(tmpdir(), prefix));
  const db = await openSqlite(join(dataDir, 'soundry.db'));
  const close = async () => {
    await db.destroy();
    await rm(dataDir, { recursive: true, force: true });
  };
  try {
    const port = await freePort();
    const issued = await issueApiKey(new SqlAccountStore(db), { credits: key.credits ?? 1000, rateLimit: key.rateLimit ?? 1000, concurrency: null });
    const base = `http://127.0.0.1:${port}`;
    const post = async (path: string, body: unknown) =>
      (await fetch(`${base}${API}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'api-key': issued.apiKey }, body: JSON.stringify(body) })).json() as Promise<any>;
    return { dataDir, port, db, issued, base, post, close };
  } catch (err) {
    await close();
    throw err;
  }
}
