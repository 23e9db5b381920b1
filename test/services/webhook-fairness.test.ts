import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqlite } from '../../src/adapters/sqlite/database.js';
import { SqlAccountStore } from '../../src/adapters/sql/account-store.js';
import { SqlWebhookStore } from '../../src/adapters/sql/webhook-store.js';
import { insertTaskQuery, insertWebhookQuery, newRow, webhookRow } from '../../src/adapters/sql/task-store.js';
import { GuardedWebhookSender } from '../../src/adapters/http-webhook-sender.js';
import { WebhookDispatcher } from '../../src/services/webhooks.js';

/**
 * Found from outside: one account whose callbacks go to a receiver that never answers (100 tasks) delayed another
 * account's callback by 36 s, because a pass sent 20 at once and waited for the slowest; and a receiver streaming an
 * endless body kept each delivery reading it until the timeout. Real SQLite store, real HTTP receivers, real sender.
 */
type Db = Awaited<ReturnType<typeof openSqlite>>;
let dir: string;
let db: Db;
const servers: Server[] = [];
const sockets = new Set<Socket>();

async function receiver(handle: (req: IncomingMessage, res: import('node:http').ServerResponse) => void): Promise<string> {
  const server = createServer(handle);
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
}

/** A finished task of `accountId` whose callback is due now. */
async function finishedTaskWithCallback(accountId: string, keyId: string, url: string, n: number): Promise<string> {
  const id = `task_${accountId}_${n}`;
  const now = Date.now();
  await insertTaskQuery(db, { ...newRow({ id, kind: 'tts', accountId, apiKeyId: keyId, params: {}, createdAt: now - 1000 + n, expiresAt: now + 3_600_000 }), state: 'success' }).execute();
  await insertWebhookQuery(db, webhookRow(id, url, now - 1000 + n)).execute();
  return id;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'soundry-webhook-fair-'));
  db = await openSqlite(join(dir, 'soundry.db'));
  const accounts = new SqlAccountStore(db);
  for (const a of ['acct_loud', 'acct_quiet']) {
    await accounts.createAccount(a, 100);
    await accounts.createKey({ id: `key_${a}`, accountId: a, hash: `h_${a}`, prefix: a.slice(0, 11), enabled: true, rateLimit: null, concurrency: null });
  }
});

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  await db?.destroy();
  await rm(dir, { recursive: true, force: true });
});

describe('webhook deliveries of one account do not hold up another\'s', () => {
  it('a quiet account\'s callback goes out at once beside 60 that hang; an endless answer is not read', async () => {
    const hanging = await receiver(() => {
      /* never answers */
    });
    let endlessBytes = 0;
    const endless = await receiver((_req, res) => {
      res.writeHead(500, { 'content-type': 'application/octet-stream' });
      const chunk = Buffer.alloc(64 * 1024);
      let open = true;
      res.on('error', () => {});
      res.on('close', () => (open = false));
      const pump = () => {
        while (open && res.write(chunk)) endlessBytes += chunk.length;
        endlessBytes += chunk.length;
      };
      res.on('drain', pump);
      pump();
    });
    let quietAt = 0;
    const quiet = await receiver((_req, res) => {
      quietAt = Date.now();
      res.end('ok');
    });
    for (let i = 0; i < 60; i++) await finishedTaskWithCallback('acct_loud', 'key_acct_loud', hanging, i);
    const streamed = await finishedTaskWithCallback('acct_quiet', 'key_acct_quiet', endless, 60);
    const quietTask = await finishedTaskWithCallback('acct_quiet', 'key_acct_quiet', quiet, 61);
    const store = new SqlWebhookStore(db);
    const dispatcher = new WebhookDispatcher(
      { store, sender: new GuardedWebhookSender({ allowPrivate: true }), payload: async () => ({ kind: 'tts', body: { code: 100000 } }), secret: 'x'.repeat(32), logger: pino({ level: 'silent' }) },
      { pollMs: 20, retryBaseMs: 60_000, maxAttempts: 3, timeoutMs: 4000 },
    );
    const started = Date.now();
    dispatcher.start();
    try {
      // Before: batches of 20 oldest-first, each waiting 4 s for its hanging receivers: the quiet one came after 12 s.
      while (quietAt === 0 && Date.now() - started < 15_000) await new Promise((r) => setTimeout(r, 20));
      expect(quietAt - started).toBeLessThan(1500);
      while ((await store.get(quietTask))?.state !== 'delivered' && Date.now() - started < 15_000) await new Promise((r) => setTimeout(r, 20));
      expect((await store.get(quietTask))?.state).toBe('delivered');
      // The endless answer's status was enough: its delivery failed at once, having read next to nothing.
      while ((await store.get(streamed))?.attempts === 0 && Date.now() - started < 15_000) await new Promise((r) => setTimeout(r, 20));
      expect(await store.get(streamed)).toMatchObject({ attempts: 1, lastError: 'the receiver answered HTTP 500' });
    } finally {
      await dispatcher.stop();
    }
    // The loud account never had more than its share under way: its rows went out 4 at a time, each ending at its timeout.
    const tried = await db.selectFrom('webhooks').select(['attempts']).where('url', '=', hanging).execute();
    expect(tried.filter((t) => Number(t.attempts) > 0).length).toBeGreaterThan(0);
    expect(tried.filter((t) => Number(t.attempts) > 0).length).toBeLessThanOrEqual(8);
    expect(endlessBytes).toBeLessThan(64 * 1024 * 1024);
  }, 30_000);
});
