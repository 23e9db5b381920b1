import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { openSqlite } from '../../src/adapters/sqlite/database.js';
import { SqlWebhookStore } from '../../src/adapters/sql/webhook-store.js';
import { GuardedWebhookSender } from '../../src/adapters/http-webhook-sender.js';
import { WebhookDispatcher } from '../../src/services/webhooks.js';

/**
 * Found from outside: while the database could not be reached, the dispatcher logged "webhook dispatch failed" at
 * every poll (473 lines of 2 KB in 2 minutes, each with the driver's client object). Now once per failing streak,
 * then one line when it works again. A real store on a database that has gone away (destroyed under it).
 */
describe('webhook dispatch failures in the log', () => {
  it('one line per failing streak, without the driver object', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'soundry-webhook-log-'));
    const db = await openSqlite(join(dir, 'soundry.db'));
    const lines: Array<{ level: number; msg: string; err?: unknown }> = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        done();
      },
    });
    const dispatcher = new WebhookDispatcher(
      { store: new SqlWebhookStore(db), sender: new GuardedWebhookSender({ allowPrivate: true }), payload: async () => null, secret: 'x'.repeat(32), logger: pino({ level: 'info' }, sink) },
      { pollMs: 20, retryBaseMs: 1000, maxAttempts: 3, timeoutMs: 1000 },
    );
    await db.destroy(); // the database is gone: every pass fails
    dispatcher.start();
    await new Promise((r) => setTimeout(r, 300));
    await dispatcher.stop();
    await rm(dir, { recursive: true, force: true });
    const failures = lines.filter((l) => l.msg.startsWith('webhook dispatch failed'));
    expect(failures).toHaveLength(1);
    expect(JSON.stringify(failures[0]!.err).length).toBeLessThan(500);
  });
});
