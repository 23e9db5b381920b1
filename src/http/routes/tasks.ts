import type { FastifyInstance, onSendHookHandler } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ApiKind } from '../../kinds/kind.js';
import type { RequestLimits } from '../../ports/limits.js';
import type { AuthService } from '../../services/auth.js';
import type { TaskService } from '../../services/tasks.js';
import { callerOf, requireApiKey } from '../auth-hooks.js';
import { success } from '../envelope.js';
import { Envelope } from '../schemas.js';
import { ERRORS } from '../../domain/errors.js';
import { CREATE_CODES, QUERY_CODES, type OpenApiDocs } from '../openapi.js';

const BASE = '/audio/api/v1/api-keys';
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/**
 * Soundry's addition to every create (docs/api.md "Webhooks"): where to POST the task's final state.
 * A separate object intersected with the kind's body, so the kinds' own schemas stay the spec's.
 */
const CallbackField = z.object({
  callback_url: z.string().max(2048).url().optional().describe('Soundry addition: POSTed the query answer, signed, when the task succeeds or fails'),
});

function withoutCallback(body: unknown): unknown {
  if (body === null || typeof body !== 'object' || !('callback_url' in body)) return body;
  const { callback_url: _callback, ...rest } = body;
  return rest;
}

/** tts/task/create -> createTtsTask, podcast/script/get -> getPodcastScript: the verb first, as clients name calls. */
function operationId(path: string): string {
  const parts = path.split('/');
  const verb = parts.pop()!;
  return verb + parts.map((p) => p[0]!.toUpperCase() + p.slice(1)).join('');
}

/** Query bodies accept either id name (clients mix them up); the spec's own name is documented. */
function queryBody(field: 'job_id' | 'global_id') {
  return z
    .object({ job_id: z.string().min(1).optional(), global_id: z.string().min(1).optional() })
    .refine((b) => b.job_id || b.global_id, { path: [field], message: 'required' });
}

export function registerTaskRoutes(
  app: FastifyInstance,
  deps: { auth: AuthService; tasks: TaskService; limits: RequestLimits; kinds: readonly ApiKind[]; docs: OpenApiDocs; atTurnEnd: onSendHookHandler },
): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  // Polls are most of the traffic: at the default LOG_LEVEL=info, Fastify's two lines per request
  // ("incoming request", "request completed") for every poll cost more than the poll's own work.
  // They show from LOG_LEVEL=debug; a poll's warnings and errors still show at info.
  const level = LOG_LEVELS.find((l) => l === app.log.level) ?? 'info';
  const pollLogLevel = level === 'info' ? 'warn' : level;
  for (const { route } of deps.kinds) {
    const available = deps.tasks.isAvailable(route.kind);
    deps.docs.set('POST', `${BASE}/${route.create}`, {
      operationId: operationId(route.create),
      data: z.looseObject({ [route.createdIdField]: z.string(), ...Object.fromEntries(Object.entries(route.createdExtra ?? {}).map(([k, v]) => [k, z.literal(v)])) }),
      example: route.example,
      codes: available ? CREATE_CODES : [...CREATE_CODES, ERRORS.CAPABILITY_NOT_AVAILABLE.code],
    });
    deps.docs.set('POST', `${BASE}/${route.get}`, { operationId: operationId(route.get), data: route.queryData, example: { [route.queryIdField]: 'the id from create' }, codes: QUERY_CODES });
    r.post(`${BASE}/${route.create}`, {
      schema: {
        tags: [route.tag],
        summary: `Create a ${route.kind.replace('_', ' ')} task${available ? '' : ` (not available on this server yet: ${ERRORS.CAPABILITY_NOT_AVAILABLE.code})`}`,
        body: z.intersection(route.body, CallbackField),
        headers: z.object({ 'api-key': z.string().optional() }),
        response: { 200: Envelope },
      },
      onRequest: requireApiKey(deps.auth, deps.limits, 'create'),
      handler: async (request) => {
        // The kind's schema strips callback_url from its side of the intersection; the kind never sees it.
        const callback = CallbackField.parse(request.body).callback_url;
        const id = await deps.tasks.create(route.kind, withoutCallback(request.body), callerOf(request), callback);
        return success({ [route.createdIdField]: id, ...route.createdExtra });
      },
    });
    r.post(`${BASE}/${route.get}`, {
      schema: {
        tags: [route.tag],
        summary: `Query a ${route.kind.replace('_', ' ')} task (takes ${route.queryIdField})`,
        body: queryBody(route.queryIdField),
        response: { 200: Envelope },
      },
      logLevel: pollLogLevel,
      onRequest: requireApiKey(deps.auth, deps.limits, 'query'),
      // Polls answer from their own socket's callback: written together at the end of the turn (answers-at-turn-end.ts).
      onSend: deps.atTurnEnd,
      handler: async (request) => {
        const body = request.body as { job_id?: string; global_id?: string };
        const id = (route.queryIdField === 'job_id' ? body.job_id ?? body.global_id : body.global_id ?? body.job_id) ?? '';
        return success(await deps.tasks.get(route.kind, id, callerOf(request)));
      },
    });
  }
}
