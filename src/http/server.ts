import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import multipart from '@fastify/multipart';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import { OpenApiDocs } from './openapi.js';
import { ERRORS } from '../domain/errors.js';
import type { Logger } from 'pino';
import type { AuthService } from '../services/auth.js';
import type { TaskService } from '../services/tasks.js';
import type { ApiKind } from '../kinds/kind.js';
import type { Metrics } from '../services/metrics.js';
import type { VoiceLibrary } from '../ports/voices.js';
import type { BlobStore, BlobUrls } from '../ports/blob-store.js';
import type { RequestLimits } from '../ports/limits.js';
import type { KindInputLimits } from '../domain/input-limits.js';
import type { UrlSigner } from './signed-url.js';
import { AppError } from '../domain/errors.js';
import { installDrain } from './drain.js';
import { Envelope } from './schemas.js';
import type { EnvelopeBody, UnavailableStore } from './envelope.js';
import { envelopeServerOptions, installErrorHandling } from './envelope.js';
import { registerTaskRoutes } from './routes/tasks.js';
import { registerVoiceRoutes } from './routes/voices.js';
import { refusal } from './envelope.js';
import { registerSystemRoutes, type HealthProbe } from './routes/system.js';
import { registerFileRoutes } from './routes/files.js';
import { registerUploadRoutes, UPLOAD_MULTIPART_LIMITS, UPLOAD_PATH } from './routes/upload.js';
import { registerVoiceAssetRoutes, type VoiceSampleRenderer } from './routes/voice-assets.js';
import { registerOpenAiRoutes } from './routes/openai.js';
import { installCors } from './cors.js';
import { answersAtTurnEnd } from './answers-at-turn-end.js';
import { deferredChildLogger } from './deferred-child-logger.js';
import type { OpenAiSpeech } from '../kinds/tts/openai.js';
import { registerAccountRoutes } from './routes/account.js';
import { registerConsoleRoutes } from './routes/console.js';
import { registerAdminRoutes } from './routes/admin.js';
import type { AdminService } from '../services/admin.js';

export interface HttpDeps {
  auth: AuthService;
  /** Per-key rate and in-flight limits; the same instance AuthService checks the rate with. */
  limits: RequestLimits;
  tasks: TaskService;
  /** The kinds' routes (the API registry, src/kinds/registry.ts). */
  kinds: readonly ApiKind[];
  voices: VoiceLibrary;
  metrics: Metrics;
  health: HealthProbe;
  blobs: BlobStore;
  /** How clients are given blobs (upload answers); the file route still checks signed links itself. */
  urls: BlobUrls;
  signer: UrlSigner;
  logger: Logger;
  uploadMaxBytes: number;
  /** The kinds' own input limits under uploadMaxBytes (ENHANCE_MAX_BYTES), held to by an upload naming its `kind`. */
  uploadKindLimits: KindInputLimits;
  uploadTtlSeconds: number;
  /** Slow clients; defaults: DEFAULT_TIMEOUTS. */
  timeouts?: HttpTimeouts;
  tmpDir: string;
  publicBaseUrl: string;
  version: string;
  voiceSamples: VoiceSampleRenderer;
  /** Browser origins allowed by CORS (CORS_ORIGINS); empty: none. */
  corsOrigins: readonly string[];
  /** POST /v1/audio/speech and its lists (docs/api.md "OpenAI-compatible routes"). */
  openAiSpeech: OpenAiSpeech;
  /** The admin page's API; null when ADMIN_TOKEN is unset (then it does not exist). */
  admin: AdminService | null;
  /** Which store an error says cannot be reached (the adapters' predicates, combined by the container): answered 503. */
  storeUnavailable?: (err: unknown) => UnavailableStore | null;
}

/**
 * How long a client may take to send a request. Fastify disables Node's request timeout by default,
 * so a client trickling a byte every few seconds could hold a connection forever (docs/api.md).
 */
export interface HttpTimeouts {
  /** Request line and headers (Node's headersTimeout): 408 envelope, connection closed. */
  headersMs: number;
  /** Headers and body of every request but uploads: 408 envelope, connection closed (the preParsing hook below). */
  requestMs: number;
  /** Headers and body of an upload; also Node's requestTimeout, the bound of every request on the server. */
  uploadMs: number;
  /** An upload slower than this (bytes/s over each window) is answered 408 and cut off; 0 or unset: no floor. */
  uploadMinBytesPerSecond?: number;
  uploadRateWindowMs?: number;
}

export const DEFAULT_TIMEOUTS: HttpTimeouts = { headersMs: 30_000, requestMs: 60_000, uploadMs: 3_600_000 };

/** Fastify and Node options for the timeouts; Node checks its deadlines every connectionsCheckingInterval. */
function timeoutOptions(t: HttpTimeouts) {
  const envelope = envelopeServerOptions();
  const requestTimeout = Math.max(t.requestMs, t.uploadMs);
  const headersTimeout = Math.min(t.headersMs, requestTimeout);
  const connectionsCheckingInterval = Math.min(5000, Math.max(100, Math.floor(Math.min(headersTimeout, t.requestMs) / 4)));
  return {
    ...envelope,
    requestTimeout,
    http: { ...envelope.http, requestTimeout, headersTimeout, connectionsCheckingInterval },
  };
}

/**
 * Bodies of JSON routes must arrive within `requestMs` of the request's start; a late one is
 * refused with the 408 envelope (error handler) and the connection closed. Uploads are bounded by
 * Node's requestTimeout (uploadMs) instead.
 */
function installBodyTimeout(app: FastifyInstance, requestMs: number): void {
  app.addHook('preParsing', (request, reply, payload, done) => {
    if (request.raw.complete || request.routeOptions.url === UPLOAD_PATH) return done(null, payload);
    const timer = setTimeout(() => {
      if (request.raw.complete || reply.sent) return;
      const err = new AppError('REQUEST_TIMEOUT', `Request timeout: the body did not arrive within ${requestMs / 1000} s`);
      // The body parser listens for errors on the payload; without one (nothing reads the body) just cut it off.
      if (payload.listenerCount('error') > 0) payload.emit('error', err);
      else request.raw.socket?.destroy();
    }, Math.max(0, requestMs - reply.elapsedTime));
    timer.unref();
    const clear = () => clearTimeout(timer);
    request.raw.once('end', clear);
    reply.raw.once('close', clear);
    done(null, payload);
  });
}

/**
 * Uploads may take UPLOAD_TIMEOUT_SECONDS (an hour), which a client could spend sending a byte every few
 * seconds while holding a connection and a parser. Each window the bytes read from the socket must reach
 * minBytesPerSecond x window, or the upload fails with the 408 envelope (REQUEST_TIMEOUT closes the
 * connection). The socket's byte counter is read, not the body stream: the multipart parser pipes the raw
 * request itself, and a listener here must not change how it flows.
 */
function installUploadRateFloor(app: FastifyInstance, minBytesPerSecond: number, windowMs: number): void {
  if (minBytesPerSecond <= 0) return;
  app.addHook('preParsing', (request, reply, payload, done) => {
    const socket = request.raw.socket;
    if (request.raw.complete || request.routeOptions.url !== UPLOAD_PATH || !socket) return done(null, payload);
    const floor = (minBytesPerSecond * windowMs) / 1000;
    let seen = socket.bytesRead;
    const timer = setInterval(() => {
      if (request.raw.complete || reply.sent) return clear();
      const now = socket.bytesRead;
      if (now - seen >= floor) {
        seen = now;
        return;
      }
      clear();
      const err = new AppError('REQUEST_TIMEOUT', `Request timeout: the upload arrived slower than ${minBytesPerSecond} bytes/s over ${windowMs / 1000} s (UPLOAD_MIN_BYTES_PER_SECOND)`);
      // The multipart parser fails the file with this error (the handler answers it); before it listens, cut the socket.
      if (request.raw.listenerCount('error') > 0) request.raw.emit('error', err);
      else socket.destroy();
    }, windowMs);
    timer.unref();
    const clear = () => clearInterval(timer);
    request.raw.once('end', clear);
    reply.raw.once('close', clear);
    done(null, payload);
  });
}

type JsonParser = ReturnType<FastifyInstance['getDefaultJsonParser']>;

/**
 * Fastify's JSON parser, except that a body refused for a `__proto__` (or `constructor.prototype`) key, which
 * Fastify reports as "not valid JSON" although it is, is refused naming the key. Only the refusal path looks again.
 */
function namingPoisonKeys(parse: JsonParser): JsonParser {
  return (request, body, done) =>
    parse(request, body, (err, value) => {
      if (err && 'code' in err && err.code === 'FST_ERR_CTP_INVALID_JSON_BODY' && isJson(body as string)) {
        return done(new AppError('INVALID_PARAMETERS', 'Invalid parameters: body: keys named __proto__ (or constructor with a prototype) are not accepted'), undefined);
      }
      done(err, value);
    });
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * A URL as the request log shows it: a signed link's signature left out, since the line would otherwise be a working
 * download link (for up to FILE_URL_TTL_SECONDS) for whoever reads the logs.
 */
export function withoutSignature(url: string): string {
  return url.includes('sig=') ? url.replace(/([?&]sig=)[^&]*/g, '$1-') : url;
}

/** Levels at which a request's info line is written (FastifyBaseLogger has no isLevelEnabled). */
const LOGS_INFO: ReadonlySet<string> = new Set(['trace', 'debug', 'info']);

const stringifyEnvelope = (data: EnvelopeBody) => JSON.stringify(data);
type ZodResponseSchema = Parameters<typeof serializerCompiler>[0]['schema'];

export async function buildHttpServer(deps: HttpDeps): Promise<FastifyInstance> {
  const timeouts = deps.timeouts ?? DEFAULT_TIMEOUTS;
  // return503OnClosing off: fastify's own 503 body is not an envelope; the hook below answers instead.
  const app = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    childLoggerFactory: deferredChildLogger,
    bodyLimit: 8 * 1024 * 1024,
    trustProxy: false,
    return503OnClosing: false,
    // Fastify's own request lines off: the onResponse hook below writes one line per request instead.
    logController: new LogController({ disableRequestLogging: true }),
    ...timeoutOptions(timeouts),
  });
  installBodyTimeout(app, timeouts.requestMs);
  installUploadRateFloor(app, timeouts.uploadMinBytesPerSecond ?? 0, timeouts.uploadRateWindowMs ?? 30_000);
  app.setValidatorCompiler(validatorCompiler);
  // Envelope answers are built by success()/refusal(), whose type already is the envelope: encoding
  // each one through zod again before JSON.stringify was a few per cent of a poll's CPU. Other
  // response schemas keep zod's check.
  app.setSerializerCompiler<ZodResponseSchema>((route) => (route.schema === Envelope ? stringifyEnvelope : serializerCompiler(route)));
  app.decorateRequest('caller', null);
  installErrorHandling(app, '', deps.storeUnavailable);

  const drain = installDrain(app);
  installCors(app, deps.corsOrigins);

  // The spec sends JSON everywhere; a client that forgets the content type, or sends text/plain
  // (fastify would hand the handler a string), still means JSON.
  app.removeContentTypeParser('text/plain');
  app.addContentTypeParser('*', { parseAs: 'string' }, namingPoisonKeys(app.getDefaultJsonParser('error', 'error')));
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, namingPoisonKeys(app.getDefaultJsonParser('error', 'error')));

  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    deps.metrics.httpDuration.observe({ method: request.method, route, status: String(reply.statusCode) }, reply.elapsedTime / 1000);
    // One line per request (Fastify's own two, "incoming request" and "request completed", are off): at the
    // route's level, so polls show from LOG_LEVEL=debug only (routes/tasks.ts). Checked first: a poll must not
    // build the line's objects (and read request.ip) only for the logger to drop them.
    if (LOGS_INFO.has(request.log.level)) request.log.info({ req: { method: request.method, url: withoutSignature(request.url), remoteAddress: request.ip }, res: { statusCode: reply.statusCode }, responseTime: reply.elapsedTime }, 'request completed');
  });

  const docs = new OpenApiDocs();
  await app.register(swagger, {
    openapi: {
      info: {
        title: 'Soundry audio API',
        version: deps.version,
        license: { name: 'MIT', url: 'https://opensource.org/license/mit' },
        description: 'Self-hosted implementation of the audio processing API. Every answer is an envelope {code, data, message}; see docs/api.md.',
      },
      servers: [{ url: deps.publicBaseUrl }],
      components: {
        securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'api-key' } },
        // Every envelope code with its message (the spec's table and Soundry's additions, docs/api.md).
        schemas: {
          ErrorCode: {
            type: 'integer',
            enum: Object.values(ERRORS).map((e) => e.code),
            description: Object.values(ERRORS).map((e) => `${e.code}: ${e.message}`).join('\n'),
          },
        },
      },
      security: [{ apiKey: [] }],
    },
    transform: docs.transform,
  });
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    // As the console: never inside another site's frame (found from outside: /docs had neither header).
    uiHooks: {
      onRequest: (_request, reply, done) => {
        void reply.header('content-security-policy', "frame-ancestors 'none'").header('x-frame-options', 'DENY').header('referrer-policy', 'same-origin');
        done();
      },
    },
  });
  // One byte over the limit reaches the store, which fails the upload at once (the upload route): cut at the limit
  // itself, the parser would drop the rest of the file but read on to its end before anyone knew it was too large.
  await app.register(multipart, { limits: { ...UPLOAD_MULTIPART_LIMITS, fileSize: deps.uploadMaxBytes + 1 } });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  registerTaskRoutes(app, { auth: deps.auth, tasks: deps.tasks, limits: deps.limits, kinds: deps.kinds, docs, atTurnEnd: answersAtTurnEnd(app.log) });
  registerVoiceRoutes(app, { auth: deps.auth, voices: deps.voices, limits: deps.limits, publicBaseUrl: deps.publicBaseUrl });
  registerVoiceAssetRoutes(app, { voices: deps.voices, blobs: deps.blobs, samples: deps.voiceSamples, tmpDir: deps.tmpDir });
  registerUploadRoutes(app, {
    auth: deps.auth,
    limits: deps.limits,
    blobs: deps.blobs,
    urls: deps.urls,
    maxBytes: deps.uploadMaxBytes,
    kindLimits: deps.uploadKindLimits,
    ttlSeconds: deps.uploadTtlSeconds,
    storeUnavailable: deps.storeUnavailable,
  });
  registerSystemRoutes(app, { metrics: deps.metrics, health: deps.health, draining: () => drain.draining });
  registerFileRoutes(app, { blobs: deps.blobs, signer: deps.signer });
  await registerOpenAiRoutes(app, { auth: deps.auth, limits: deps.limits, voices: deps.voices, speech: deps.openAiSpeech, storeUnavailable: deps.storeUnavailable });
  registerAccountRoutes(app, { auth: deps.auth, limits: deps.limits });
  registerConsoleRoutes(app);
  registerAdminRoutes(app, deps.admin);
  return app;
}

/**
 * A worker node serves no API, but orchestrators still need to probe it: /healthz, /readyz and /metrics
 * only, on the same PORT, answering 503 once it drains.
 */
export async function buildSystemServer(deps: Pick<HttpDeps, 'metrics' | 'health' | 'logger'>): Promise<FastifyInstance> {
  const app = Fastify({ loggerInstance: deps.logger as FastifyBaseLogger, return503OnClosing: false, ...timeoutOptions(DEFAULT_TIMEOUTS) });
  // The API's error handling, envelopes for every refusal. Before, a body on an unknown path (the 404 is a route
  // too, and parses one) got Fastify's own 400/415 body: 810 of 10,000 fuzzed requests to a worker node.
  installErrorHandling(app, ' (a worker node serves /healthz, /readyz and /metrics only)');
  const drain = installDrain(app);
  registerSystemRoutes(app, { metrics: deps.metrics, health: deps.health, draining: () => drain.draining });
  return app;
}
