import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { TaskKind } from '../../domain/task.js';
import type { AuthService } from '../../services/auth.js';
import type { TaskService } from '../../services/tasks.js';
import { callerOf, InFlightRequests, requireApiKey } from '../auth-hooks.js';
import { success } from '../envelope.js';
import {
  EnhanceCreateBody,
  Envelope,
  PodcastAudioCreateBody,
  PodcastScriptCreateBody,
  SeparationCreateBody,
  TtsCreateBody,
} from '../schemas.js';

const BASE = '/audio/api/v1/api-keys';

interface TaskRoute {
  kind: TaskKind;
  tag: string;
  create: string;
  get: string;
  body: z.ZodType;
  /** The spec names the id differently per operation. */
  createdIdField: 'job_id' | 'global_id';
  queryIdField: 'job_id' | 'global_id';
  /** Extra fields the spec shows in the create answer. */
  createdExtra?: Record<string, unknown>;
}

const ROUTES: TaskRoute[] = [
  { kind: 'separation', tag: 'Separation', create: 'separation/task/create', get: 'separation/task/get', body: SeparationCreateBody, createdIdField: 'job_id', queryIdField: 'job_id' },
  { kind: 'tts', tag: 'Text to speech', create: 'tts/task/create', get: 'tts/task/get', body: TtsCreateBody, createdIdField: 'job_id', queryIdField: 'global_id' },
  { kind: 'enhance', tag: 'Enhancement', create: 'enhance/task/create', get: 'enhance/task/get', body: EnhanceCreateBody, createdIdField: 'job_id', queryIdField: 'job_id', createdExtra: { model: 2 } },
  { kind: 'podcast_script', tag: 'Podcast', create: 'podcast/script/create', get: 'podcast/script/get', body: PodcastScriptCreateBody, createdIdField: 'global_id', queryIdField: 'global_id' },
  { kind: 'podcast_audio', tag: 'Podcast', create: 'podcast/audio/create', get: 'podcast/audio/get', body: PodcastAudioCreateBody, createdIdField: 'global_id', queryIdField: 'global_id' },
];

/** Query bodies accept either id name (clients mix them up); the spec's own name is documented. */
function queryBody(field: 'job_id' | 'global_id') {
  return z
    .object({ job_id: z.string().min(1).optional(), global_id: z.string().min(1).optional() })
    .refine((b) => b.job_id || b.global_id, { path: [field], message: 'required' });
}

export function registerTaskRoutes(
  app: FastifyInstance,
  deps: { auth: AuthService; tasks: TaskService; inFlight: InFlightRequests },
): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  for (const route of ROUTES) {
    const available = deps.tasks.isAvailable(route.kind);
    r.post(`${BASE}/${route.create}`, {
      schema: {
        tags: [route.tag],
        summary: `Create a ${route.kind.replace('_', ' ')} task${available ? '' : ' (not available on this server yet: 101010)'}`,
        body: route.body,
        headers: z.object({ 'api-key': z.string().optional() }),
        response: { 200: Envelope },
      },
      onRequest: requireApiKey(deps.auth, deps.inFlight, 'create'),
      handler: async (request) => {
        const id = await deps.tasks.create(route.kind, request.body, callerOf(request));
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
      onRequest: requireApiKey(deps.auth, deps.inFlight, 'query'),
      handler: async (request) => {
        const body = request.body as { job_id?: string; global_id?: string };
        const id = (route.queryIdField === 'job_id' ? body.job_id ?? body.global_id : body.global_id ?? body.job_id) ?? '';
        return success(await deps.tasks.get(route.kind, id, callerOf(request)));
      },
    });
  }
}
