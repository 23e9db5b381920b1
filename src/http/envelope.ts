import { maxHeaderSize, STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyHttpOptions, FastifyInstance, FastifyReply, FastifyRequest, RawServerDefault } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { AppError, ERRORS } from '../domain/errors.js';

export interface EnvelopeBody {
  code: number;
  data: Record<string, unknown>;
  message: string;
}

export function success(data: Record<string, unknown>): EnvelopeBody {
  return { code: ERRORS.SUCCESS.code, data, message: ERRORS.SUCCESS.message };
}

export function refusal(err: AppError): EnvelopeBody {
  return { code: err.code, data: {}, message: err.message };
}

/** Names the offending field the way clients write it: `speakers[1]`, `enhance_type.normalize`. */
function fieldPath(instancePath: string): string {
  return instancePath
    .replace(/^\/+/, '')
    .split('/')
    .filter(Boolean)
    .map((part, i) => (/^\d+$/.test(part) ? `[${part}]` : i === 0 ? part : `.${part}`))
    .join('');
}

/** The value at a validation error's path in what the client sent there (body, query...; undefined when absent). */
function valueAt(sent: unknown, instancePath: string): unknown {
  let value = sent;
  for (const part of instancePath.split('/').filter(Boolean)) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

/**
 * zod checks every integer against the safe-integer range as well as the field's own bounds: a number past both
 * was reported twice ("Too big: expected int to be <=9007199254740991; Too big: expected number to be <=1000000000"),
 * the first naming a bound nobody set. That one goes whenever the field has another problem to show.
 */
export function withoutImplicitIntBounds<T extends { instancePath: string; message?: string }>(issues: readonly T[]): T[] {
  const implicit = (v: T) => /^Too (big|small): expected int to be [<>]=-?9007199254740991$/.test(v.message ?? '');
  return issues.filter((v) => !implicit(v) || !issues.some((o) => o !== v && o.instancePath === v.instancePath && !implicit(o)));
}

function validationMessage(err: FastifyError, sent: unknown): string {
  if (hasZodFastifySchemaValidationErrors(err)) {
    const issues = withoutImplicitIntBounds(err.validation).map((v) => {
      // Unions and enums report a missing field as "Invalid input"/"Invalid option": look at what was sent.
      const missing = /received undefined$/.test(v.message ?? '') || (v.instancePath !== '' && /^Invalid (input|option)\b/.test(v.message ?? '') && valueAt(sent, v.instancePath) === undefined);
      return { field: fieldPath(v.instancePath) || 'body', text: missing ? 'required' : (v.message ?? 'invalid') };
    });
    // Each problem once: an intersection reports a wrong body twice, and a field that is there but wrong
    // (an empty global_id) is not also "required" (the refinement that asks for one of two id fields).
    const named = new Set(issues.filter((i) => i.text !== 'required').map((i) => i.field));
    const parts = [...new Set(issues.filter((i) => i.text !== 'required' || !named.has(i.field)).map((i) => `${i.field}: ${i.text}`))];
    return `Invalid parameters: ${parts.join('; ')}`;
  }
  return `Invalid parameters: ${err.message}`;
}

function notFound(request: FastifyRequest, note: string): EnvelopeBody {
  return refusal(new AppError('NOT_FOUND', `Not Found: ${request.method} ${request.url.split('?')[0]}${note}`));
}

/**
 * The only place envelopes for errors are written. Business refusals and bad input answer HTTP 200
 * (the business result is in `code`); unknown paths 404; our own faults 500 (docs/api.md).
 */
/** Which store an error says cannot be reached (HttpDeps.storeUnavailable), or null when it says something else. */
export type UnavailableStore = 'database' | 'file store';

/** The answer when a store cannot be reached: a 503 to retry, not our fault. */
export function storeUnavailableError(store: UnavailableStore): AppError {
  return new AppError('SERVICE_UNAVAILABLE', `Service unavailable: the ${store} cannot be reached. Try again shortly`, 5);
}
export const DATABASE_UNAVAILABLE = storeUnavailableError('database').message;

/**
 * `unavailable`: which store, if any, an error says cannot be reached (the database or the file store: a restart, a
 * failover, a network cut, S3 answering 503). Such a request is answered 503 / 100503 with Retry-After, as a queue that
 * cannot be reached is, instead of 500 "internal error": it is worth retrying, and it is not a bug to log at error
 * level for every request during the outage.
 */
export function installErrorHandling(app: FastifyInstance, notFoundNote = '', unavailable: (err: unknown) => UnavailableStore | null = () => null): void {
  app.setErrorHandler((error: FastifyError, request, reply: FastifyReply) => {
    closeIfBodyUnread(request.raw, reply);
    if (error instanceof AppError) {
      void reply.headers(error.headers);
      if (error.retryAfterSeconds !== undefined) void reply.header('retry-after', String(error.retryAfterSeconds));
      if (error.errorName === 'REQUEST_TIMEOUT') {
        // A body that did not arrive in time (server.ts): what is left of it is never read, so the connection goes.
        return reply.status(408).header('connection', 'close').send(refusal(error));
      }
      return reply.status(error.errorName === 'SERVICE_UNAVAILABLE' ? 503 : 200).send(refusal(error));
    }
    const tooLarge = bodyTooLarge(error);
    if (request.is404) {
      // The not-found handler is a route too, and Fastify parses its body first: a path nobody serves is the
      // 404 whatever the body (seen from outside: a bad body on an unknown path answered 100002, or on a worker
      // node Fastify's own 400/415 body).
      return reply.status(404).send(notFound(request, notFoundNote));
    }
    if (error.validation || hasZodFastifySchemaValidationErrors(error)) {
      // What was sent where the schema failed: a query string's bad value is not a "required" body field.
      const sent = { body: request.body, querystring: request.query, params: request.params, headers: request.headers }[error.validationContext ?? 'body'];
      return reply.status(200).send(refusal(new AppError('INVALID_PARAMETERS', validationMessage(error, sent))));
    }
    if (tooLarge) return reply.status(200).send(refusal(new AppError('PAYLOAD_TOO_LARGE')));
    if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
      const aboutBody = error instanceof SyntaxError || (error.code ?? '').startsWith('FST_ERR_CTP_');
      if (!aboutBody && (error.statusCode === 403 || error.statusCode === 404)) {
        // A plugin's refusal (the docs' static files refuse "../"): an unknown path, not a body problem.
        return reply.status(404).send(notFound(request, notFoundNote));
      }
      // Malformed JSON, empty body, bad content type: all the one validation code.
      const detail = error instanceof SyntaxError || error.code === 'FST_ERR_CTP_INVALID_JSON_BODY'
        ? 'body: not valid JSON'
        : `body: ${error.message}`;
      return reply.status(200).send(refusal(new AppError('INVALID_PARAMETERS', `Invalid parameters: ${detail}`)));
    }
    const store = unavailable(error);
    if (store) {
      request.log.warn({ err: error }, `the ${store} cannot be reached: answered 503`);
      const refused = storeUnavailableError(store);
      return reply.status(503).header('retry-after', String(refused.retryAfterSeconds)).send(refusal(refused));
    }
    request.log.error({ err: error }, 'unhandled error');
    return reply.status(500).send(refusal(new AppError('INTERNAL_ERROR')));
  });
  app.setNotFoundHandler((request, reply) => {
    reply.status(404).send(notFound(request, notFoundNote));
  });
  installProtocolErrorHandling(app);
}

/*
 * Answers written before routing. Node's HTTP parser and Fastify's router refuse some requests before any
 * route, hook or error handler sees them, and would answer with their own bodies (`{"error":"Bad Request",
 * "message":"Client Error"}`, an empty 400, or no answer at all). These options and listeners make those
 * answers envelopes too; the HTTP statuses are in docs/api.md ("Answers before routing").
 */

/** What the client is told about a parse error: llhttp's reason (a fixed text, never the client's bytes). */
function parseProblem(err: Error & { code?: string; reason?: unknown }): string {
  const reason = typeof err.reason === 'string' && err.reason ? err.reason : err.code ?? 'unreadable request';
  return reason.replace(/[^\x20-\x7e]/g, '?').slice(0, 120);
}

/** The refusal (status and envelope) for an error of Node's HTTP parser on a connection. */
export function clientErrorRefusal(err: Error & { code?: string; reason?: unknown }): { status: number; error: AppError } {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return { status: 431, error: new AppError('HEADERS_TOO_LARGE', `Request header fields too large: the request line and headers exceed ${maxHeaderSize} bytes`) };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { status: 408, error: new AppError('REQUEST_TIMEOUT', 'Request timeout: the request did not arrive in time') };
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return { status: 413, error: new AppError('PAYLOAD_TOO_LARGE', 'Payload too large: chunk extensions too long') };
    default:
      return { status: 400, error: new AppError('INVALID_PARAMETERS', `Invalid parameters: request: malformed HTTP (${parseProblem(err)})`) };
  }
}

/** Connections already answered: the parser may report the same broken connection more than once. */
const answeredSockets = new WeakSet<Duplex>();
/** How long a refused connection may still send before it is closed (it must be able to read the answer). */
const REFUSED_LINGER_MS = 2000;
/**
 * How long a refusal of malformed HTTP waits for the answers to requests pipelined ahead of it; past that the
 * connection is closed without it. Those requests are bounded by the server's own timeouts anyway.
 */
const PENDING_ANSWERS_MS = 120_000;

/**
 * A body refused before it has all arrived (too large) is answered with `Connection: close` (Fastify sets it),
 * and Node closes the connection as soon as the answer is written. With the rest of the body unread that close
 * is a reset, and a client still sending gets an error instead of the answer (fetch, measured from outside:
 * EPIPE for 11 of 40 uploads of 9 MB). Here the connection is closed once the client has sent its body (Node
 * reads and drops it) or after REFUSED_LINGER_MS, whichever comes first.
 */
/** Fastify refused the body as too large, before it had all arrived: its connection lingers (lingerAfterAnswer). */
export function bodyTooLarge(error: FastifyError): boolean {
  return error.code === 'FST_ERR_CTP_BODY_TOO_LARGE' || error.statusCode === 413;
}

/**
 * A refusal sent before the request's body has all arrived (no key, a bad key, a bad query: checked before the body is
 * read; a body over the limit) closes the connection once the body has come or REFUSED_LINGER_MS passed
 * (lingerAfterAnswer). Otherwise Node reads and drops the rest of the body to keep the connection for a next request,
 * however large the body says it is: a client without a valid key could make the server read 200 MiB (found from
 * outside).
 */
export function closeIfBodyUnread(req: IncomingMessage, reply: FastifyReply): void {
  if (req.complete) return;
  lingerAfterAnswer(req);
  void reply.header('connection', 'close');
}

export function lingerAfterAnswer(req: IncomingMessage): void {
  const socket = req.socket;
  if (!socket || req.complete) return;
  // Node calls destroySoon() once the answer is written (resOnFinish); this instance's waits for the body first.
  socket.destroySoon = () => {
    socket.end();
    const close = () => {
      clearTimeout(timer);
      socket.destroy();
    };
    const timer = setTimeout(close, REFUSED_LINGER_MS).unref();
    if (req.complete) close();
    else req.once('end', close).once('close', close);
  };
}

/**
 * Writes one envelope answer straight to a connection and closes it: for connections whose HTTP can no
 * longer be trusted (after a parse error, or a CONNECT), so nothing else may be read from them.
 */
function answerOnSocket(socket: Duplex, status: number, error: AppError): void {
  if (answeredSockets.has(socket)) return;
  answeredSockets.add(socket);
  const waitingSince = Date.now();
  const answer = () => {
    if (socket.destroyed || !socket.writable) return void socket.destroy();
    // Requests pipelined ahead of the bad one are answered first, in order (HTTP/1.1 answers in request order): a
    // refusal written ahead of them would be read as the answer to the first, whose work (a create, a charge)
    // still happens. Node hands the connection to the next queued answer as each one finishes.
    // A pending answer whose request is still incomplete is the bad request's own (its body broke the parse): the
    // refusal replaces it.
    const pending = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
    if (pending && !pending.writableFinished && pending.req.complete && Date.now() - waitingSince < PENDING_ANSWERS_MS) {
      const next = () => {
        pending.off('finish', next);
        pending.off('close', next);
        setImmediate(answer);
      };
      pending.once('finish', next);
      pending.once('close', next);
      return;
    }
    // An answer already under way on this connection cannot be interrupted by another one; nor can one still
    // unfinished after that long be followed by ours.
    if (pending && !pending.writableFinished && (pending.headersSent || pending.req.complete)) return void socket.destroy();
    const body = JSON.stringify(refusal(error));
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\ncontent-type: application/json; charset=utf-8\r\n` +
        `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
    // Read and drop what the client still sends: closing with unread input resets the connection, which can
    // make the client lose the answer. The connection goes after a short while whatever the client does.
    socket.resume();
    setTimeout(() => socket.destroy(), REFUSED_LINGER_MS).unref();
  };
  answer();
}

/** Fastify server options that route the framework's own refusals here. */
export function envelopeServerOptions(): Pick<FastifyHttpOptions<RawServerDefault>, 'clientErrorHandler' | 'frameworkErrors' | 'http'> {
  return {
    // Malformed HTTP, header overflow (431), duplicate Content-Length, bad header values, unknown methods, timeouts.
    clientErrorHandler(err, socket) {
      if (err.code === 'ECONNRESET' || socket.destroyed) return;
      const { status, error } = clientErrorRefusal(err);
      answerOnSocket(socket, status, error);
    },
    // Errors of the router before any route: a path that is not valid percent-encoding, a too-long parameter.
    frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
      const path = (request.raw.url ?? '').split('?')[0] ?? '';
      if (error.code === 'FST_ERR_BAD_URL') {
        void reply.status(400).send(refusal(new AppError('INVALID_PARAMETERS', 'Invalid parameters: path: not a valid URL (malformed percent-encoding)')));
      } else if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
        // Longer than any name the routes serve: nothing can be there.
        void reply.status(404).send(refusal(new AppError('NOT_FOUND', `Not Found: ${request.raw.method ?? ''} ${path.slice(0, 200)}`)));
      } else {
        request.log.error({ err: error }, 'router error');
        void reply.status(500).send(refusal(new AppError('INTERNAL_ERROR')));
      }
    },
    // Node answers an HTTP/1.1 request without Host with an empty 400; the hook below answers it instead.
    http: { requireHostHeader: false },
  };
}

/** The protocol refusals Node would otherwise answer itself (or not at all), as envelopes. Used with envelopeServerOptions(). */
function installProtocolErrorHandling(app: FastifyInstance): void {
  app.addHook('onRequest', async (request, reply) => {
    if (request.raw.httpVersion === '1.1' && request.headers.host === undefined) {
      // RFC 9112 3.2: a server must refuse it with 400.
      return reply.status(400).send(refusal(new AppError('INVALID_PARAMETERS', 'Invalid parameters: header host: required (HTTP/1.1)')));
    }
    // Bodies are never decoded: a gzip body was refused as "not valid JSON", and an upload stored as the compressed
    // bytes. Said as it is (RFC 9110 allows 415); thrown, so that /v1 answers it in its own shape.
    const encoding = request.headers['content-encoding'];
    const hasBody = request.headers['transfer-encoding'] !== undefined || (request.headers['content-length'] ?? '0') !== '0';
    if (encoding !== undefined && hasBody && encoding.trim().toLowerCase() !== 'identity') {
      throw new AppError('INVALID_PARAMETERS', `Invalid parameters: header content-encoding: compressed request bodies are not accepted (${encoding.slice(0, 40)}); send the body uncompressed`);
    }
  });
  // `Expect` other than 100-continue: Node would answer an empty 417.
  app.server.on('checkExpectation', (req, res: ServerResponse) => {
    const body = JSON.stringify(refusal(new AppError('INVALID_PARAMETERS', 'Invalid parameters: header expect: only 100-continue is supported')));
    res.writeHead(417, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), connection: 'close' });
    res.end(body);
  });
  // CONNECT (proxy tunnels): Node would drop the connection without an answer.
  app.server.on('connect', (req, socket: Duplex) => {
    answerOnSocket(socket, 404, new AppError('NOT_FOUND', 'Not Found: CONNECT (this server is not a proxy)'));
  });
  // A client that half-closes once its request is sent (`printf ... | ncat`, a script's shutdown(SHUT_WR)) still
  // reads the answer: by default Node aborts the requests still in progress when the client's FIN arrives and
  // closes the connection unanswered (seen from outside: every route slower than the FIN got no answer). With
  // this Node's own flag, the connection closes after the last answer instead. The flag is Node's
  // http.Server property (since 0.x), not in its typings.
  (app.server as typeof app.server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
}
