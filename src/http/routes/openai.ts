import { Readable } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { AppError, concurrencyLimited, type ErrorName } from '../../domain/errors.js';
import type { RequestLimits } from '../../ports/limits.js';
import type { VoiceLibrary } from '../../ports/voices.js';
import type { AuthService, Operation } from '../../services/auth.js';
import { OpenAiSpeechBody } from '../../kinds/tts/contract.js';
import { bodyTooLarge, closeIfBodyUnread, storeUnavailableError, withoutImplicitIntBounds, type UnavailableStore } from '../envelope.js';
import { OPENAI_SPEECH_MODELS, OPENAI_VOICES, openAiVoice, SpeechRefusal, type OpenAiSpeech } from '../../kinds/tts/openai.js';

const CONTENT_TYPES: Record<OpenAiSpeechBody['response_format'], string> = {
  mp3: 'audio/mpeg',
  opus: 'audio/ogg',
  aac: 'audio/aac',
  flac: 'audio/flac',
  wav: 'audio/wav',
  pcm: 'audio/pcm',
};

/** OpenAI's error body: what its clients parse into their error classes. */
interface OpenAiErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/**
 * HTTP status, `type` and `code` of each refusal on these routes, chosen so the official clients raise
 * the matching class: 400 BadRequestError, 401 AuthenticationError, 403 PermissionDeniedError,
 * 429 RateLimitError. Credits: 402, which the clients do not retry (their 429 would be retried in vain).
 */
const OPENAI_STATUS: Partial<Record<ErrorName, { status: number; type: string; code: string }>> = {
  INVALID_API_KEY: { status: 401, type: 'invalid_request_error', code: 'invalid_api_key' },
  NEED_LOGIN: { status: 401, type: 'invalid_request_error', code: 'invalid_api_key' },
  RATE_LIMITED: { status: 429, type: 'requests', code: 'rate_limit_exceeded' },
  CONCURRENCY_LIMITED: { status: 429, type: 'requests', code: 'concurrency_limit_exceeded' },
  INSUFFICIENT_CREDITS: { status: 402, type: 'insufficient_quota', code: 'insufficient_quota' },
  KEY_NOT_ENABLED: { status: 403, type: 'permission_error', code: 'api_key_disabled' },
  ACCOUNT_SUSPENDED: { status: 403, type: 'permission_error', code: 'account_suspended' },
  INVALID_PARAMETERS: { status: 400, type: 'invalid_request_error', code: 'invalid_value' },
  TEXT_TOO_LONG: { status: 400, type: 'invalid_request_error', code: 'string_above_max_length' },
  PAYLOAD_TOO_LARGE: { status: 413, type: 'invalid_request_error', code: 'payload_too_large' },
  NOT_FOUND: { status: 404, type: 'invalid_request_error', code: 'not_found' },
  REQUEST_TIMEOUT: { status: 408, type: 'invalid_request_error', code: 'request_timeout' },
  SERVICE_UNAVAILABLE: { status: 503, type: 'server_error', code: 'service_unavailable' },
};

function openAiError(err: AppError): { status: number; body: OpenAiErrorBody } {
  const mapped = OPENAI_STATUS[err.errorName] ?? { status: 500, type: 'server_error', code: 'internal_error' };
  const param = err instanceof SpeechRefusal ? err.param : err.errorName === 'TEXT_TOO_LONG' ? 'input' : null;
  return { status: mapped.status, body: { error: { message: err.message, type: mapped.type, param, code: mapped.code } } };
}

/** `Authorization: Bearer <key>` (OpenAI's clients); Soundry's own `api-key` header works too. */
function bearerKey(request: FastifyRequest): string | undefined {
  const auth = request.headers.authorization;
  const m = auth ? /^Bearer\s+(.+)$/i.exec(auth.trim()) : null;
  const own = request.headers['api-key'];
  return m?.[1]?.trim() || (typeof own === 'string' ? own.trim() : undefined) || undefined;
}

export interface OpenAiRouteDeps {
  auth: AuthService;
  limits: RequestLimits;
  voices: VoiceLibrary;
  speech: OpenAiSpeech;
  /** The database unreachable: answered 503 (as the envelope routes do), not 500. */
  storeUnavailable?: (err: unknown) => UnavailableStore | null;
}

function unknownRoute(request: FastifyRequest): AppError {
  return new AppError('NOT_FOUND', `Unknown route: ${request.method} ${request.url.split('?')[0]}`);
}

/**
 * OpenAI-compatible routes under /v1 (docs/api.md "OpenAI-compatible routes"): their own error handler,
 * so refusals here are OpenAI's error bodies and statuses, not the spec's envelopes.
 */
export async function registerOpenAiRoutes(app: FastifyInstance, deps: OpenAiRouteDeps): Promise<void> {
  await app.register(
    async (v1) => {
      v1.setErrorHandler((error: FastifyError, request, reply: FastifyReply) => {
        // A body refused before it has all arrived (too large, or a bad key checked first): the connection closes once it
        // has, or after a short wait (envelope.ts).
        closeIfBodyUnread(request.raw, reply);
        const tooLarge = bodyTooLarge(error);
        let appError: AppError;
        const store = deps.storeUnavailable?.(error) ?? null;
        // A route nobody serves is the 404 whatever its body (its handler parses one first, like any route).
        if (request.is404 && !(error instanceof AppError)) appError = unknownRoute(request);
        else if (error instanceof AppError) appError = error;
        else if (hasZodFastifySchemaValidationErrors(error)) {
          const first = withoutImplicitIntBounds(error.validation)[0];
          const param = first?.instancePath.replace(/^\//, '').replace(/\//g, '.') || 'body';
          appError = new SpeechRefusal(param, `Invalid parameter ${param}: ${first?.message ?? 'invalid'}`);
        } else if (tooLarge) appError = new AppError('PAYLOAD_TOO_LARGE');
        else if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
          appError = new SpeechRefusal('body', `Invalid request body: ${error instanceof SyntaxError ? 'not valid JSON' : error.message}`);
        } else if (store) {
          request.log.warn({ err: error }, `the ${store} cannot be reached: answered 503`);
          appError = storeUnavailableError(store);
        } else {
          request.log.error({ err: error }, 'unhandled error on an OpenAI route');
          appError = new AppError('INTERNAL_ERROR');
        }
        const { status, body } = openAiError(appError);
        void reply.headers(appError.headers);
        if (appError.retryAfterSeconds !== undefined) void reply.header('retry-after', String(appError.retryAfterSeconds));
        else if (status === 429) void reply.header('retry-after', '1');
        return reply.status(status).send(body);
      });
      v1.setNotFoundHandler((request, reply) => {
        const { status, body } = openAiError(unknownRoute(request));
        return reply.status(status).send(body);
      });

      const authenticate = (op: Operation) => async (request: FastifyRequest, reply: FastifyReply) => {
        const caller = await deps.auth.authenticate(bearerKey(request), op, request.ip);
        const ticket = await deps.limits.enter(caller.key.id, caller.concurrency);
        if (!ticket) throw concurrencyLimited(caller.concurrency, 1);
        request.caller = caller;
        if (reply.raw.closed) void deps.limits.leave(ticket);
        else reply.raw.once('close', () => void deps.limits.leave(ticket));
      };

      const r = v1.withTypeProvider<ZodTypeProvider>();
      r.get('/models', {
        schema: { tags: ['OpenAI-compatible'], summary: 'Speech model names accepted by /v1/audio/speech' },
        onRequest: authenticate('list'),
        handler: async () => ({
          object: 'list',
          data: OPENAI_SPEECH_MODELS.map((id) => ({ id, object: 'model', created: 0, owned_by: 'soundry' })),
        }),
      });
      r.get('/audio/voices', {
        schema: { tags: ['OpenAI-compatible'], summary: 'Voices for /v1/audio/speech: OpenAI names, then every Soundry voice' },
        onRequest: authenticate('list'),
        handler: async () => {
          const all = await deps.voices.list();
          const aliases = Object.keys(OPENAI_VOICES).flatMap((id) => {
            const v = openAiVoice(id, all);
            return v ? [{ id, name: id, soundry_voice_id: v.id, language: v.language, gender: v.gender === 2 ? 'female' : 'male' }] : [];
          });
          const own = all.map((v) => ({ id: v.name, name: v.display_name, soundry_voice_id: v.id, language: v.language, gender: v.gender === 2 ? 'female' : 'male' }));
          return { object: 'list', data: [...aliases, ...own] };
        },
      });
      r.post('/audio/speech', {
        schema: { tags: ['OpenAI-compatible'], summary: "OpenAI's text to speech: audio streamed back as sentences are spoken", body: OpenAiSpeechBody },
        onRequest: authenticate('create'),
        handler: async (request, reply) => {
          const caller = request.caller!;
          const plan = await deps.speech.plan(request.body);
          const charge = await deps.speech.charge(caller, plan);
          const abort = new AbortController();
          // The client gone: stop synthesizing (the engines and ffmpeg are told through the signal).
          reply.raw.once('close', () => {
            if (!reply.raw.writableFinished) abort.abort(new Error('client closed the connection'));
          });
          // The client's end of the connection closed before any audio went out. With half-open connections
          // allowed (envelope.ts) a client that closes (curl's timeout, a fetch abort, a browser tab) is at first
          // told from one that only half-closes and still reads; the connection then fails at the first audio
          // written to it. Such a failure is the client's leaving before any audio reached it: refunded.
          const socket = request.raw.socket;
          let closedBeforeAudio = socket.readableEnded;
          const onEnd = () => (closedBeforeAudio = true);
          socket.once('end', onEnd);
          reply.raw.once('close', () => socket.off('end', onEnd));
          const spoke: { engine?: string; note?: string } = {};
          const audio = deps.speech.stream(plan, abort.signal, (engine, note) => Object.assign(spoke, { engine, note }));
          let first: IteratorResult<Buffer>;
          try {
            // The first chunk before the headers: a failure up to here is still an error answer, and refunded.
            first = await audio.next();
          } catch (err) {
            await charge.refund();
            // The client left before any audio: nobody to answer, and not a server error (it was logged as one, at
            // level 50, for every reset request). Its in-flight slot is freed by the connection's close.
            if (abort.signal.aborted) {
              request.log.info({ credits: plan.price }, 'speech request closed by the client before its first audio: refunded');
              return reply.hijack();
            }
            throw err;
          }
          // From here what was written may have been read: a client that closes its end later has had audio.
          socket.off('end', onEnd);
          if (closedBeforeAudio) {
            reply.raw.once('close', () => {
              if (reply.raw.writableFinished) return;
              request.log.info({ credits: plan.price }, 'speech request closed by the client before its first audio: refunded');
              charge.refund().catch((err: unknown) => request.log.error({ err }, 'speech refund failed'));
            });
          }
          async function* rest(): AsyncGenerator<Buffer> {
            if (!first.done) yield first.value;
            try {
              for (;;) {
                const next = await audio.next();
                if (next.done) return;
                yield next.value;
              }
            } catch (err) {
              // Refunded by the close listener above: the client closed its end before any audio.
              if (abort.signal.aborted && closedBeforeAudio) throw err;
              // Headers are out: the cut connection is the error; the credits go back unless the client left.
              if (!abort.signal.aborted) await charge.refund();
              request.log.warn({ err }, 'speech stream failed part way');
              throw err;
            }
          }
          void reply
            .header('content-type', CONTENT_TYPES[plan.format])
            .header('x-soundry-credits', String(plan.price))
            .header('x-soundry-voice', String(plan.voice.id));
          // What a task's result says in `engine` / `engine_note`, for the first sentence (all share one voice).
          if (spoke.engine) void reply.header('x-soundry-engine', spoke.engine);
          if (spoke.note) void reply.header('x-soundry-engine-note', headerText(spoke.note));
          return reply.send(Readable.from(rest()));
        },
      });
    },
    { prefix: '/v1' },
  );
}

/** A header value Node accepts (visible ASCII and spaces): voice names and file names are ASCII, anything else becomes '?'. */
function headerText(text: string): string {
  return text.replace(/[^\x20-\x7e]/g, '?');
}
