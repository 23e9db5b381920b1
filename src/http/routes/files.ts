import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ERRORS, type ErrorName } from '../../domain/errors.js';
import type { BlobStore } from '../../ports/blob-store.js';
import { decodeKeyPath } from '../../ports/blob-keys.js';
import type { UrlSigner } from '../signed-url.js';

/**
 * `GET|HEAD /files/<key>?exp=..&sig=..`: serves result blobs behind signed, expiring links.
 * The key is taken from the raw URL and decoded segment by segment by us (not by the router), so
 * `%2e%2e`, `%2f`, empty segments and the like are judged on what they decode to.
 * Whatever the store: on S3 (S3_URL_MODE=api) the answer is streamed from the bucket, a Range
 * becoming a GetObject Range, so only the asked bytes leave the bucket. In presigned mode the
 * route still serves links issued before the switch.
 */

export interface FileRouteDeps {
  blobs: BlobStore;
  signer: Pick<UrlSigner, 'verify'>;
}

const PREFIX = '/files/';

type RangeRequest = { kind: 'none' } | { kind: 'unsatisfiable' } | { kind: 'range'; start: number; end: number };

/** Decoded key from a request path, or null when it is not a well-formed relative key. */
export function keyFromPath(rawUrl: string): string | null {
  const pathname = rawUrl.split('?', 1)[0] ?? '';
  if (!pathname.startsWith(PREFIX)) return null;
  return decodeKeyPath(pathname.slice(PREFIX.length));
}

/** One `bytes=` range (RFC 9110 §14.1.2). Malformed or multi-range headers are ignored (full 200). */
export function parseRange(header: string | undefined, size: number): RangeRequest {
  if (!header) return { kind: 'none' };
  const m = /^bytes=(\d*)-(\d*)$/i.exec(header.trim());
  if (!m) return { kind: 'none' };
  const [, startStr = '', endStr = ''] = m;
  if (startStr === '' && endStr === '') return { kind: 'none' };
  if (startStr === '') {
    const suffix = Number(endStr);
    if (suffix === 0 || size === 0) return { kind: 'unsatisfiable' };
    return { kind: 'range', start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(startStr);
  const lastAsked = endStr === '' ? Infinity : Number(endStr);
  if (lastAsked < start) return { kind: 'none' };
  if (start >= size) return { kind: 'unsatisfiable' };
  return { kind: 'range', start, end: Math.min(lastAsked, size - 1) };
}

function sendEnvelope(reply: FastifyReply, status: number, name: ErrorName, detail?: string): FastifyReply {
  const { code } = ERRORS[name];
  const message = detail ?? ERRORS[name].message;
  return reply
    .code(status)
    .header('cache-control', 'no-store')
    .header('content-type', 'application/json; charset=utf-8')
    .send({ code, data: {}, message });
}

function isMissing(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR' || code === 'NoSuchKey';
}

export function registerFileRoutes(app: FastifyInstance, deps: FileRouteDeps): void {
  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    const rawUrl = request.raw.url ?? '';
    const key = keyFromPath(rawUrl);
    const query = new URLSearchParams(rawUrl.includes('?') ? rawUrl.slice(rawUrl.indexOf('?') + 1) : '');
    // A malformed key can never carry a valid signature: same answer as a bad link.
    if (key === null || deps.signer.verify(key, query.get('exp') ?? undefined, query.get('sig') ?? undefined) !== 'ok') {
      return sendEnvelope(reply, 403, 'FILE_LINK_INVALID');
    }
    const info = await deps.blobs.stat(key);
    if (!info) return sendEnvelope(reply, 404, 'NOT_FOUND', missing(request));

    const filename = key.slice(key.lastIndexOf('/') + 1);
    reply
      .header('content-type', info.contentType)
      .header('accept-ranges', 'bytes')
      .header('content-disposition', `inline; filename="${filename}"`)
      .header('cache-control', 'private')
      .header('x-content-type-options', 'nosniff');
    // Blobs share the API's origin: anything a browser could run (svg, html, ...) gets a sandbox.
    if (!/^(audio|video)\//.test(info.contentType)) reply.header('content-security-policy', "default-src 'none'; sandbox");

    // Without validators we cannot honour If-Range, so it always means "send everything".
    const rangeHeader = request.headers['if-range'] === undefined ? request.headers.range : undefined;
    const range = parseRange(rangeHeader, info.size);
    if (range.kind === 'unsatisfiable') {
      return reply.code(416).header('content-range', `bytes */${info.size}`).header('content-length', '0').send();
    }
    const span = range.kind === 'range' ? { start: range.start, end: range.end } : undefined;
    const length = span ? span.end - span.start + 1 : info.size;
    if (span) reply.code(206).header('content-range', `bytes ${span.start}-${span.end}/${info.size}`);
    reply.header('content-length', String(length));
    if (request.method === 'HEAD' || length === 0) return reply.send();

    try {
      return reply.send(await deps.blobs.read(key, span));
    } catch (err) {
      // Deleted between stat and read.
      if (!isMissing(err)) throw err;
      reply.removeHeader('content-range').removeHeader('content-length').removeHeader('content-disposition');
      return sendEnvelope(reply, 404, 'NOT_FOUND', missing(request));
    }
  };

  app.route({ method: ['GET', 'HEAD'], url: '/files/*', exposeHeadRoute: false, handler });
}

/** The 100404 message of every route (docs/api.md): method and path, without the link's signature. */
function missing(request: FastifyRequest): string {
  return `Not Found: ${request.method} ${request.url.split('?')[0]!.slice(0, 200)}`;
}
