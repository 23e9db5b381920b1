import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AdminService } from '../../services/admin.js';
import { success } from '../envelope.js';
import { Envelope } from '../schemas.js';
import { KEY_LIMITS } from '../../domain/key-limits.js';

const BASE = '/admin/api';
const TOKEN_HEADER = 'x-admin-token';

const CreditsBody = z.object({ account_id: z.string().min(1).max(100), amount: z.number().int().min(1).max(KEY_LIMITS.creditsMax) });
const KeyBody = z.object({ account_id: z.string().min(1).max(100).optional(), credits: z.number().int().min(0).max(KEY_LIMITS.creditsMax).default(0) });
const KeyEnabledBody = z.object({ key_id: z.string().min(1).max(100), enabled: z.boolean() });

/**
 * The admin page's API (docs/api.md, Admin). With ADMIN_TOKEN unset, only /admin/api/enabled exists
 * (answering false), so the console knows to hide the page and nothing else can be reached.
 */
export function registerAdminRoutes(app: FastifyInstance, admin: AdminService | null): void {
  app.get(`${BASE}/enabled`, { schema: { hide: true } }, async () => success({ enabled: admin !== null }));
  if (!admin) return;
  const r = app.withTypeProvider<ZodTypeProvider>();
  const onRequest = async (request: FastifyRequest) => {
    const value = request.headers[TOKEN_HEADER];
    await admin.checkToken(Array.isArray(value) ? value[0] : value, request.ip);
  };
  const headers = z.object({ [TOKEN_HEADER]: z.string().optional() });
  const response = { 200: Envelope };
  const tags = ['Admin'];
  r.get(`${BASE}/accounts`, { schema: { tags, summary: "Accounts, their keys and each key's usage", headers, response }, onRequest }, async () =>
    success({ accounts: await admin.overview() }),
  );
  r.post(`${BASE}/credits`, { schema: { tags, summary: 'Add credits to an account', headers, body: CreditsBody, response }, onRequest }, async (request) =>
    success(await admin.addCredits(request.body.account_id, request.body.amount)),
  );
  r.post(
    `${BASE}/keys`,
    { schema: { tags, summary: 'Create an API key (and an account unless account_id is given); the key is shown only now', headers, body: KeyBody, response }, onRequest },
    async (request) => success(await admin.createKey({ accountId: request.body.account_id, credits: request.body.credits })),
  );
  r.post(`${BASE}/keys/enabled`, { schema: { tags, summary: 'Enable or disable an API key', headers, body: KeyEnabledBody, response }, onRequest }, async (request) =>
    success(await admin.setKeyEnabled(request.body.key_id, request.body.enabled)),
  );
}
