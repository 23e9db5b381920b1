import type { FastifyInstance } from 'fastify';
import type { RequestLimits } from '../../ports/limits.js';
import type { AuthService } from '../../services/auth.js';
import { callerOf, requireApiKey } from '../auth-hooks.js';
import { success } from '../envelope.js';
import { Envelope } from '../schemas.js';

const BASE = '/audio/api/v1/api-keys';

/**
 * The caller's balance (beyond the spec, which shows no way to read it): the console shows it, and
 * clients can check it before a create instead of learning it from 100100. Checked like a query, so a
 * disabled key or a suspended account can still see where it stands.
 */
export function registerAccountRoutes(app: FastifyInstance, deps: { auth: AuthService; limits: RequestLimits }): void {
  app.get(`${BASE}/account/balance`, {
    schema: { tags: ['Account'], summary: "The key's account: balance in credits, status, and the key's state", response: { 200: Envelope } },
    onRequest: requireApiKey(deps.auth, deps.limits, 'query'),
    handler: async (request) => {
      const caller = callerOf(request);
      const { key } = caller;
      const account = await deps.auth.currentAccount(caller);
      // held: what unfinished tasks hold of the balance; available: what a new task can be promised.
      return success({
        account_id: account.id, balance: account.balance, held: account.held, available: Math.max(0, account.balance - account.held),
        status: account.status, key_id: key.id, key_prefix: key.prefix, key_enabled: key.enabled,
      });
    },
  });
}
