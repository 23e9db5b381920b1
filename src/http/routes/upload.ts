import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { AppError } from '../../domain/errors.js';
import type { BlobStore } from '../../ports/blob-store.js';
import type { AuthService } from '../../services/auth.js';
import { callerOf, InFlightRequests, requireApiKey } from '../auth-hooks.js';
import { success } from '../envelope.js';
import type { UrlSigner } from '../signed-url.js';

/** Keeps a readable, safe file name: letters, digits, dot, dash, underscore. */
export function safeFileName(name: string | undefined): string {
  const base = (name ?? '').split(/[\\/]/).pop() ?? '';
  const cleaned = base.replace(/[^A-Za-z0-9._-]+/g, '_').replace(/^[._]+/, '').slice(-120);
  return cleaned || 'upload.bin';
}

/**
 * Beyond the spec: multipart upload that answers a signed URL usable as `inputurl`.
 * Uploads live under uploads/<id>/ and expire with the same TTL as tasks.
 */
export function registerUploadRoutes(
  app: FastifyInstance,
  deps: { auth: AuthService; inFlight: InFlightRequests; blobs: BlobStore; signer: UrlSigner; tmpDir: string; ttlSeconds: number },
): void {
  app.post('/audio/api/v1/api-keys/files/upload', {
    schema: { tags: ['Files'], summary: 'Upload a file (multipart field "file"); answers data.url for use as inputurl', consumes: ['multipart/form-data'] },
    onRequest: requireApiKey(deps.auth, deps.inFlight, 'create'),
    handler: async (request) => {
      callerOf(request);
      if (!request.isMultipart()) throw new AppError('INVALID_PARAMETERS', 'Invalid parameters: body: expected multipart/form-data with a "file" field');
      const part = await request.file();
      if (!part) throw new AppError('INVALID_PARAMETERS', 'Invalid parameters: file: required');
      const dir = await mkdtemp(join(deps.tmpDir, 'upload-'));
      try {
        const local = join(dir, 'data');
        await pipeline(part.file, createWriteStream(local));
        if (part.file.truncated) throw new AppError('PAYLOAD_TOO_LARGE', 'Payload too large: the file exceeds the upload limit');
        const key = `uploads/${randomUUID().replace(/-/g, '')}/${safeFileName(part.filename)}`;
        const info = await deps.blobs.putFile(key, local, part.mimetype || 'application/octet-stream');
        return success({ url: deps.signer.sign(key, deps.ttlSeconds), size: info.size, expires_in: deps.ttlSeconds });
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  });
}
