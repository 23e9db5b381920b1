import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
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

/** The value at a validation error's path in what the client sent (undefined when absent). */
function valueAt(body: unknown, instancePath: string): unknown {
  let value = body;
  for (const part of instancePath.split('/').filter(Boolean)) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

function validationMessage(err: FastifyError, body: unknown): string {
  if (hasZodFastifySchemaValidationErrors(err)) {
    const parts = err.validation.map((v) => {
      // Unions and enums report a missing field as "Invalid input"/"Invalid option": look at the body itself.
      const missing = /received undefined$/.test(v.message ?? '') || (v.instancePath !== '' && /^Invalid (input|option)\b/.test(v.message ?? '') && valueAt(body, v.instancePath) === undefined);
      return `${fieldPath(v.instancePath) || 'body'}: ${missing ? 'required' : v.message}`;
    });
    return `Invalid parameters: ${parts.join('; ')}`;
  }
  return `Invalid parameters: ${err.message}`;
}

/**
 * The only place envelopes for errors are written. Business refusals and bad input answer HTTP 200
 * (the business result is in `code`); unknown paths 404; our own faults 500 (docs/api.md).
 */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply: FastifyReply) => {
    if (error instanceof AppError) {
      return reply.status(error.errorName === 'SERVICE_UNAVAILABLE' ? 503 : 200).send(refusal(error));
    }
    if (error.validation || hasZodFastifySchemaValidationErrors(error)) {
      return reply.status(200).send(refusal(new AppError('INVALID_PARAMETERS', validationMessage(error, request.body))));
    }
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE' || error.statusCode === 413) {
      return reply.status(200).send(refusal(new AppError('PAYLOAD_TOO_LARGE')));
    }
    if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
      const aboutBody = error instanceof SyntaxError || (error.code ?? '').startsWith('FST_ERR_CTP_');
      if (!aboutBody && (error.statusCode === 403 || error.statusCode === 404)) {
        // A plugin's refusal (the docs' static files refuse "../"): an unknown path, not a body problem.
        return reply.status(404).send(refusal(new AppError('NOT_FOUND', `Not Found: ${request.method} ${request.url.split('?')[0]}`)));
      }
      // Malformed JSON, empty body, bad content type: all the one validation code.
      const detail = error instanceof SyntaxError || error.code === 'FST_ERR_CTP_INVALID_JSON_BODY'
        ? 'body: not valid JSON'
        : `body: ${error.message}`;
      return reply.status(200).send(refusal(new AppError('INVALID_PARAMETERS', `Invalid parameters: ${detail}`)));
    }
    request.log.error({ err: error }, 'unhandled error');
    return reply.status(500).send(refusal(new AppError('INTERNAL_ERROR')));
  });
  app.setNotFoundHandler((request, reply) => {
    reply.status(404).send(refusal(new AppError('NOT_FOUND', `Not Found: ${request.method} ${request.url.split('?')[0]}`)));
  });
}
