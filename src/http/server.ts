import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import multipart from '@fastify/multipart';
import { jsonSchemaTransform, serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import type { Logger } from 'pino';
import type { AuthService } from '../services/auth.js';
import type { TaskService } from '../services/tasks.js';
import type { Metrics } from '../services/metrics.js';
import type { VoiceLibrary } from '../ports/voices.js';
import type { BlobStore } from '../ports/blob-store.js';
import type { UrlSigner } from './signed-url.js';
import { AppError } from '../domain/errors.js';
import { InFlightRequests } from './auth-hooks.js';
import { installErrorHandling } from './envelope.js';
import { registerTaskRoutes } from './routes/tasks.js';
import { registerVoiceRoutes } from './routes/voices.js';
import { registerSystemRoutes, type HealthProbe } from './routes/system.js';
import { registerFileRoutes } from './routes/files.js';
import { registerUploadRoutes } from './routes/upload.js';
import { registerVoiceAssetRoutes, type VoiceSampleRenderer } from './routes/voice-assets.js';

export interface HttpDeps {
  auth: AuthService;
  tasks: TaskService;
  voices: VoiceLibrary;
  metrics: Metrics;
  health: HealthProbe;
  blobs: BlobStore;
  signer: UrlSigner;
  logger: Logger;
  uploadMaxBytes: number;
  uploadTtlSeconds: number;
  tmpDir: string;
  publicBaseUrl: string;
  version: string;
  voiceSamples: VoiceSampleRenderer;
}

export async function buildHttpServer(deps: HttpDeps): Promise<FastifyInstance> {
  // return503OnClosing off: fastify's own 503 body is not an envelope; the hook below answers instead.
  const app = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    bodyLimit: 8 * 1024 * 1024,
    trustProxy: false,
    return503OnClosing: false,
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  app.decorateRequest('caller', null);
  installErrorHandling(app);

  // While draining (SIGTERM), requests still arriving on open connections get a 503 envelope (100503).
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onRequest', async () => {
    if (closing) throw new AppError('SERVICE_UNAVAILABLE');
  });

  // The spec sends JSON everywhere; a client that forgets the content type, or sends text/plain
  // (fastify would hand the handler a string), still means JSON.
  app.removeContentTypeParser('text/plain');
  app.addContentTypeParser('*', { parseAs: 'string' }, (request, body, done) => {
    app.getDefaultJsonParser('error', 'ignore')(request, body as string, done);
  });

  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    deps.metrics.httpDuration.observe({ method: request.method, route, status: String(reply.statusCode) }, reply.elapsedTime / 1000);
  });

  await app.register(swagger, {
    openapi: {
      info: {
        title: 'Soundry audio API',
        version: deps.version,
        description: 'Self-hosted implementation of the audio processing API. Every answer is an envelope {code, data, message}; see docs/api.md.',
      },
      servers: [{ url: deps.publicBaseUrl }],
      components: { securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'api-key' } } },
      security: [{ apiKey: [] }],
    },
    transform: jsonSchemaTransform,
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  await app.register(multipart, { limits: { fileSize: deps.uploadMaxBytes, files: 1 } });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  const inFlight = new InFlightRequests();
  registerTaskRoutes(app, { auth: deps.auth, tasks: deps.tasks, inFlight });
  registerVoiceRoutes(app, { auth: deps.auth, voices: deps.voices, inFlight, publicBaseUrl: deps.publicBaseUrl });
  registerVoiceAssetRoutes(app, { voices: deps.voices, blobs: deps.blobs, samples: deps.voiceSamples, tmpDir: deps.tmpDir });
  registerUploadRoutes(app, {
    auth: deps.auth,
    inFlight,
    blobs: deps.blobs,
    signer: deps.signer,
    tmpDir: deps.tmpDir,
    ttlSeconds: deps.uploadTtlSeconds,
  });
  registerSystemRoutes(app, { metrics: deps.metrics, health: deps.health });
  registerFileRoutes(app, { blobs: deps.blobs, signer: deps.signer });
  return app;
}
