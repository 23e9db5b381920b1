import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { ADMIN_TOKEN_FAILURES } from '../../src/services/admin.js';

/**
 * The admin token is chosen by a person, so its wrong guesses are limited per client address (docs/api.md, Admin
 * API): past ADMIN_TOKEN_FAILURES.failures within the window, the address is refused, the right token included.
 * Found from outside: 300 wrong tokens were answered in 0.16 s, with no limit at all.
 */
const TOKEN = 'admin-token-for-the-guess-test';
let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ ADMIN_TOKEN: TOKEN }, { workers: false });
});
afterAll(async () => app?.close());

/** GET /admin/api/accounts from `from` (any 127.x address reaches the server on Linux's loopback). */
function accounts(token: string | undefined, from = '127.0.0.1'): Promise<{ retryAfter: string | undefined; json: { code: number; message: string; data: Record<string, unknown> } }> {
  const url = new URL(`${app.baseUrl}/admin/api/accounts`);
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path: url.pathname, localAddress: from, headers: token === undefined ? {} : { 'x-admin-token': token } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ retryAfter: res.headers['retry-after'] as string | undefined, json: JSON.parse(body) }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('admin API validation', () => {
  // Runs before the guesses below block 127.0.0.1. zod's own safe-integer bound was named too, and first.
  it('a number past a field\'s bound names that bound once', async () => {
    for (const amount of [1e308, 2 ** 53 + 1]) {
      const res = await fetch(`${app.baseUrl}/admin/api/credits`, {
        method: 'POST',
        headers: { 'x-admin-token': TOKEN, 'content-type': 'application/json' },
        body: JSON.stringify({ account_id: 'acct_x', amount }),
      });
      expect(await res.json()).toEqual({ code: 100002, data: {}, message: 'Invalid parameters: amount: Too big: expected number to be <=1000000000' });
    }
  });
});

describe('admin token guesses', () => {
  it.runIf(process.platform === 'linux')('100401 up to the limit, then 101003 for the address, right token included; other addresses unaffected', async () => {
    expect((await accounts(TOKEN)).json.code).toBe(100000);
    // A missing token counts as a wrong one.
    expect((await accounts(undefined)).json).toEqual({ code: 100401, data: {}, message: 'Invalid admin token' });
    for (let i = 1; i < ADMIN_TOKEN_FAILURES.failures; i++) expect((await accounts(`wrong-admin-token-${i}`)).json.code).toBe(100401);
    const blocked = await accounts('wrong-admin-token-again');
    expect(blocked.json.code).toBe(101003);
    expect(blocked.json.message).toMatch(/^Too many wrong admin tokens from this address: admin requests from it are refused for \d+ s more, the right token included \(the admin CLI is not limited\)$/);
    expect(Number(blocked.retryAfter)).toBeGreaterThan(ADMIN_TOKEN_FAILURES.blockSeconds - 10);
    expect(Number(blocked.retryAfter)).toBeLessThanOrEqual(ADMIN_TOKEN_FAILURES.blockSeconds);
    // The right token from the blocked address is refused too: a guesser cannot tell when it hit.
    expect((await accounts(TOKEN)).json.code).toBe(101003);
    // Another address is not locked out.
    expect((await accounts(TOKEN, '127.0.0.2')).json.code).toBe(100000);
    expect((await accounts('wrong-admin-token-elsewhere', '127.0.0.2')).json.code).toBe(100401);
  });
});
