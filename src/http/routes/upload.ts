import { randomUUID } from 'node:crypto';
import { pipeline, Transform, type Readable, type TransformCallback } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError } from '../../domain/errors.js';
import { kindInputTooLarge, type KindInputLimit, type KindInputLimits } from '../../domain/input-limits.js';
import { TASK_KINDS, type TaskKind } from '../../domain/task.js';
import { BlobTooLargeError, type BlobStore, type BlobUrls } from '../../ports/blob-store.js';
import type { RequestLimits } from '../../ports/limits.js';
import type { AuthService } from '../../services/auth.js';
import { callerOf, requireApiKey } from '../auth-hooks.js';
import { storeUnavailableError, success, type UnavailableStore } from '../envelope.js';

/** Latin letters that have no decomposition into a base letter and accents (NFD leaves them whole). */
const LATIN_LIGATURES: Record<string, string> = {
  ß: 'ss', ẞ: 'SS', æ: 'ae', Æ: 'AE', œ: 'oe', Œ: 'OE', ø: 'o', Ø: 'O', ł: 'l', Ł: 'L', đ: 'd', Đ: 'D', ð: 'd', Ð: 'D', þ: 'th', Þ: 'Th', ı: 'i', ħ: 'h', Ħ: 'H', ŀ: 'l', Ŀ: 'L',
};

/**
 * Latin letters with accents as their base letters (`café` -> `cafe`, `Straße` -> `Strasse`): stored keys keep to
 * [A-Za-z0-9._-] (src/ports/blob-keys.ts), and the accents alone were dropped with their letters (`café.mp3` was
 * stored as `caf.mp3`, found from outside). The compatibility decomposition also spells ligatures and full-width or
 * styled letters as plain ones (`ﬁle` -> `file`, `ｆｕｌｌ` -> `full`, `ĳ` -> `ij`). Other scripts have no such
 * spelling and are replaced as before.
 */
function latinBase(name: string): string {
  return name
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .replace(/[ßẞæÆœŒøØłŁđĐðÐþÞıħĦŀĿ]/g, (c) => LATIN_LIGATURES[c] ?? c);
}

/**
 * Keeps a readable, safe file name: letters, digits, dot, dash, underscore, and always its extension, which is what
 * the file is served as (found from outside: `日本語😀.mp3` became `mp3`, served as application/octet-stream). A name
 * with nothing readable before its extension becomes `upload<ext>`; none at all, `upload.bin`. Never a dotfile.
 */
export function safeFileName(name: string | undefined): string {
  // A browser's (and the SDK's) multipart encoder escapes a quote and a line break in the name as %22, %0D, %0A, which the
  // parser does not undo: `say "hi".mp3` was stored as `say_22hi_22.mp3` (found from outside). Read them as the
  // characters they stand for, which are then replaced like any other.
  const base = (name ?? '').replace(/%(22|0D|0A)/gi, ' ').split(/[\\/]/).pop() ?? '';
  const cleaned = latinBase(base).replace(/[^A-Za-z0-9._-]+/g, '_');
  const ext = /\.[A-Za-z0-9]{1,16}$/.exec(cleaned)?.[0] ?? '';
  const stem = cleaned.slice(0, cleaned.length - ext.length).replace(/^[._]+/, '').replace(/[._]+$/, '').slice(-(120 - ext.length));
  if (!stem && !ext) return 'upload.bin';
  // A name Windows keeps for a device (CON, NUL, COM1...) would not save there under the name the download offers.
  const safeStem = /^(con|prn|aux|nul|com\d|lpt\d)$/i.test(stem) ? `${stem}_` : stem;
  return `${safeStem || 'upload'}${ext}`;
}

/**
 * The multipart file stream, failing at its end when the parser cut it at the size limit. The
 * parser does not fail a truncated file, it just ends it; failing it before its end is what makes
 * the store discard the partial upload instead of keeping the first `limit` bytes.
 */
function failIfTruncated(file: Readable & { truncated?: boolean }, maxBytes: number): Readable {
  const guard = new Transform({
    transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback) {
      callback(null, chunk);
    },
    flush(callback: TransformCallback) {
      callback(file.truncated ? new BlobTooLargeError(maxBytes) : null);
    },
  });
  // Errors of either side reach the store through `guard`.
  return pipeline(file, guard, () => undefined);
}

/** At most this many parts before the file, and this large a text field: the route reads one file and nothing else. */
export const UPLOAD_MULTIPART_LIMITS = { files: 1, fields: 16, fieldSize: 64 * 1024, parts: 17, headerPairs: 64 } as const;

/** What a multipart body may hold besides the file: its fields (at most 16 of 64 KiB) and the parts' headers. */
const MULTIPART_OVERHEAD_BYTES = UPLOAD_MULTIPART_LIMITS.fields * UPLOAD_MULTIPART_LIMITS.fieldSize + 1024 * 1024;

const MULTIPART_BODY_CODES = new Set([
  'FST_REQ_FILE_TOO_LARGE', 'FST_FILES_LIMIT', 'FST_FIELDS_LIMIT', 'FST_PARTS_LIMIT', 'FST_PROTO_VIOLATION',
  'FST_INVALID_JSON_FIELD_ERROR', 'FST_MP_PREMATURE_CLOSE', 'ECONNRESET',
]);

/** Whether an error that ended a file stream came from the client's body (the parser, the connection), not the store. */
export function isMultipartBodyError(err: unknown): boolean {
  if (err === null || typeof err !== 'object') return false;
  const { code, message } = err as { code?: unknown; message?: unknown };
  if (typeof code === 'string' && MULTIPART_BODY_CODES.has(code)) return true;
  return typeof message === 'string' && /multipart|boundary|terminated early|^aborted$/i.test(message);
}

/**
 * What is wrong with a multipart body, from an error of the multipart parser (busboy, @fastify/multipart):
 * always the client's body (100002, or 100413 for a file over the limit), never our fault.
 */
export function multipartRefusal(err: unknown): AppError {
  if (err instanceof AppError) return err;
  const e = err as { code?: unknown; message?: unknown } | null | undefined;
  const code = typeof e?.code === 'string' ? e.code : '';
  const message = typeof e?.message === 'string' ? e.message : String(err);
  switch (code) {
    case 'FST_REQ_FILE_TOO_LARGE':
      return new AppError('PAYLOAD_TOO_LARGE', 'Payload too large: the file exceeds the upload limit');
    case 'FST_FILES_LIMIT':
      return new AppError('INVALID_PARAMETERS', 'Invalid parameters: body: more than one file (send one "file" part)');
    case 'FST_FIELDS_LIMIT':
      return new AppError('INVALID_PARAMETERS', `Invalid parameters: body: too many fields (at most ${UPLOAD_MULTIPART_LIMITS.fields})`);
    case 'FST_PARTS_LIMIT':
      return new AppError('INVALID_PARAMETERS', `Invalid parameters: body: too many parts (at most ${UPLOAD_MULTIPART_LIMITS.parts})`);
    case 'FST_PROTO_VIOLATION':
      return new AppError('INVALID_PARAMETERS', 'Invalid parameters: body: a part name that is not allowed');
    case 'FST_INVALID_JSON_FIELD_ERROR':
      return new AppError('INVALID_PARAMETERS', 'Invalid parameters: body: a field declared as JSON is not valid JSON');
    case 'FST_MP_PREMATURE_CLOSE':
    case 'ECONNRESET':
      return new AppError('INVALID_PARAMETERS', 'Invalid parameters: body: the request ended before the multipart body was complete');
    default:
      break;
  }
  // busboy's own texts, which name the problem (none of them repeats the client's bytes).
  if (/boundary|needle/i.test(message)) return new AppError('INVALID_PARAMETERS', 'Invalid parameters: body: multipart boundary missing or invalid in the content type');
  if (/unexpected end|terminated early|aborted/i.test(message)) return new AppError('INVALID_PARAMETERS', 'Invalid parameters: body: multipart body truncated (no closing boundary)');
  return new AppError('INVALID_PARAMETERS', `Invalid parameters: body: malformed multipart (${message.replace(/[^\x20-\x7e]/g, '?').slice(0, 120)})`);
}

/**
 * `kind`: the task kind the file is for. A kind with its own lower input limit (enhance: ENHANCE_MAX_BYTES) has the
 * upload held to it, so a client learns at once, not after sending hundreds of MB and a failed task. Any kind is
 * accepted (the SDK names the kind for every upload it makes); one without a lower limit changes nothing.
 */
const UploadQuery = z.object({
  kind: z.enum(TASK_KINDS, { error: (issue) => (Array.isArray(issue.input) ? 'given more than once: send one kind' : undefined) }).optional().describe('The task kind the file is for: an upload is held to that kind\'s own input limit where it is lower (enhance: ENHANCE_MAX_BYTES)'),
});

/** The limit this upload is held to: the kind's own where that is lower than UPLOAD_MAX_BYTES, else null (the global one). */
function lowerKindLimit(kind: TaskKind | undefined, limits: KindInputLimits, maxBytes: number): { kind: TaskKind; limit: KindInputLimit } | null {
  const limit = kind ? limits[kind] : undefined;
  return kind && limit && limit.maxBytes < maxBytes ? { kind, limit } : null;
}

/**
 * Beyond the spec: multipart upload that answers a URL usable as `inputurl` (a signed /files/ link,
 * or an S3 presigned URL). The file streams straight into the blob store (S3: a multipart upload),
 * never spooled to local disk first. Uploads live under uploads/<id>/ and expire with the task TTL.
 */
/** The upload route: its body may take UPLOAD_TIMEOUT_SECONDS, not REQUEST_TIMEOUT_SECONDS (server.ts). */
export const UPLOAD_PATH = '/audio/api/v1/api-keys/files/upload';

export function registerUploadRoutes(
  app: FastifyInstance,
  deps: {
    auth: AuthService;
    limits: RequestLimits;
    blobs: BlobStore;
    urls: BlobUrls;
    maxBytes: number;
    /** The kinds' own input limits, applied with `?kind=` (the composition root builds them from config). */
    kindLimits: KindInputLimits;
    ttlSeconds: number;
    /** Which store an error says cannot be reached (HttpDeps.storeUnavailable). */
    storeUnavailable?: (err: unknown) => UnavailableStore | null;
  },
): void {
  app.withTypeProvider<ZodTypeProvider>().post(UPLOAD_PATH, {
    schema: {
      operationId: 'uploadFile',
      tags: ['Files'],
      summary: 'Upload a file (multipart field "file"); answers data.url for use as inputurl',
      consumes: ['multipart/form-data'],
      querystring: UploadQuery,
    },
    onRequest: requireApiKey(deps.auth, deps.limits, 'create'),
    // The multipart parser stops reading the body once it has seen the closing boundary or an error, and
    // Node does not read what is left of a body someone started reading: an answer sent before the body's
    // end would leave the connection waiting for it forever (the client's next request on it never
    // answered, the socket never closed). Read the rest and drop it.
    onResponse: async (request) => {
      if (!request.raw.complete && !request.raw.destroyed) {
        request.raw.unpipe();
        request.raw.resume();
      }
    },
    handler: async (request) => {
      callerOf(request);
      if (!request.isMultipart()) throw new AppError('INVALID_PARAMETERS', 'Invalid parameters: body: expected multipart/form-data with a "file" field');
      // A body declared larger than any acceptable upload (for its kind, when named) is refused before a byte of it is
      // read (it used to be read until the limit, or held until the rate floor cut it): the connection closes after the
      // answer, as for every refusal of a body not all arrived (closeIfBodyUnread, in the error handler).
      const lower = lowerKindLimit(request.query.kind, deps.kindLimits, deps.maxBytes);
      const maxBytes = lower?.limit.maxBytes ?? deps.maxBytes;
      const declared = Number(request.headers['content-length']);
      if (declared > maxBytes + MULTIPART_OVERHEAD_BYTES) {
        const found = `the request declares ${declared} bytes`;
        throw lower
          ? kindInputTooLarge(lower.kind, lower.limit, found)
          : new AppError('PAYLOAD_TOO_LARGE', `Payload too large: ${found}; an upload may be at most ${deps.maxBytes} bytes (UPLOAD_MAX_BYTES)`);
      }
      // Whatever fails before the file starts is the body's fault: no boundary, garbage, truncation, limits.
      let part: Awaited<ReturnType<typeof request.file>>;
      try {
        part = await request.file();
      } catch (err) {
        throw multipartRefusal(err);
      }
      if (!part) throw new AppError('INVALID_PARAMETERS', 'Invalid parameters: file: required');
      const key = `uploads/${randomUUID().replace(/-/g, '')}/${safeFileName(part.filename)}`;
      let size: number;
      try {
        // The parser cuts at UPLOAD_MAX_BYTES (the plugin's fileSize); a kind's lower limit is the store's to cut at.
        ({ size } = await deps.blobs.putStream(key, failIfTruncated(part.file, deps.maxBytes), part.mimetype || 'application/octet-stream', maxBytes));
      } catch (err) {
        // Over the limit first: a file cut at the limit whose body then broke off was still too large.
        if (err instanceof BlobTooLargeError || part.file.truncated) {
          // Cut by the store while the body still comes (no length, or one that lied): the error handler closes the
          // connection rather than read the rest (a chunked body without end: until UPLOAD_TIMEOUT_SECONDS).
          if (!lower) throw new AppError('PAYLOAD_TOO_LARGE', 'Payload too large: the file exceeds the upload limit');
          throw kindInputTooLarge(lower.kind, lower.limit, 'the file exceeds the limit');
        }
        // The store gone (S3 cut or answering 503): it also breaks the body off, which read as the client's fault
        // (100002 "the request ended...", found from outside); the client should try again, not fix its request.
        const store = deps.storeUnavailable?.(err);
        if (store) throw storeUnavailableError(store);
        // The parser fails the file stream when the body breaks off (truncated, connection gone); the store
        // failing destroys it too, with the store's error, which stays ours (500).
        const bodyFault = [err, part.file.errored].find(isMultipartBodyError);
        if (bodyFault) throw multipartRefusal(bodyFault);
        throw err;
      }
      // The link cannot outlive the upload (reaped after the task TTL) nor what the issuer can give.
      const ttl = Math.min(deps.ttlSeconds, deps.urls.maxTtlSeconds);
      return success({ url: await deps.urls.url(key, ttl), size, expires_in: ttl });
    },
  });
}
