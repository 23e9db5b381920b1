import { jsonSchemaTransform } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ERRORS, type ErrorName } from '../domain/errors.js';

/** What the OpenAPI document says of one operation beyond its route schema. */
export interface OperationDoc {
  operationId: string;
  /** The shape of data in a successful envelope. */
  data?: z.ZodType;
  /** A request body that passes the route's own validation (test/http/openapi.test.ts parses it). */
  example?: unknown;
  /** The envelope codes this operation answers. */
  codes: readonly number[];
}

const MESSAGE_BY_CODE = new Map<number, string>(Object.values(ERRORS).map((e) => [e.code, e.message]));

/** The spec's codes per operation kind (Errors, "Codes per operation"), plus Soundry's 100002 for a bad body. */
const codesOf = (names: readonly ErrorName[]) => names.map((n) => ERRORS[n].code);
export const CREATE_CODES = codesOf(['SUCCESS', 'INVALID_PARAMETERS', 'INSUFFICIENT_CREDITS', 'INVALID_API_KEY', 'RATE_LIMITED', 'CONCURRENCY_LIMITED', 'ACCOUNT_SUSPENDED', 'KEY_NOT_ENABLED']);
export const QUERY_CODES = codesOf(['SUCCESS', 'INVALID_PARAMETERS', 'INSUFFICIENT_CREDITS', 'INVALID_API_KEY', 'RATE_LIMITED', 'CONCURRENCY_LIMITED', 'TASK_NOT_FOUND']);

/** `Envelope` with a typed data, as a JSON schema for the document only (answers are never validated against it). */
function envelopeJson(data: z.ZodType, codes: readonly number[]): Record<string, unknown> {
  const schema = z.object({
    code: z.number().meta({ enum: [...codes], description: 'Result code: Request Success on success, see the operation description for the others' }),
    data: data.meta({ description: 'Payload on success; an empty object when the request is refused' }),
    message: z.string(),
  });
  const { $schema: _drop, ...json } = z.toJSONSchema(schema, { target: 'openapi-3.0', io: 'output', unrepresentable: 'any' }) as Record<string, unknown>;
  return json;
}

/**
 * What every operation may answer before it runs: malformed HTTP or JSON, a body or headers too large, a
 * client too slow (docs/api.md, "HTTP statuses"): still the envelope, its code from the ErrorCode list.
 */
const REFUSED_BEFORE_RUNNING = {
  description: 'Refused before the operation ran (malformed request or body, too large, too slow): an envelope; see docs/api.md',
  type: 'object',
  properties: { code: { $ref: '#/components/schemas/ErrorCode' }, data: { type: 'object' }, message: { type: 'string' } },
  required: ['code', 'data', 'message'],
} as const;

/** The OpenAI-compatible routes answer OpenAI's error body with HTTP statuses (docs/api.md, "OpenAI-compatible routes"). */
const OPENAI_ERROR = {
  description: "Refused: OpenAI's error body (400 bad request, 401 key, 402 credits, 403 disabled, 404, 429 limits)",
  type: 'object',
  properties: {
    error: {
      type: 'object',
      properties: { message: { type: 'string' }, type: { type: 'string' }, param: { type: 'string', nullable: true }, code: { type: 'string', nullable: true } },
      required: ['message', 'type'],
    },
  },
  required: ['error'],
} as const;

/**
 * zod writes a numeric enum that also accepts numeric strings as `enum` plus a one-member `anyOf`; the same
 * schema without the wrapper (lint: no-illogical-composition-keywords).
 */
function flattenSingleAnyOf(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(flattenSingleAnyOf);
  if (!node || typeof node !== 'object') return;
  const obj = node as Record<string, unknown>;
  const anyOf = obj.anyOf;
  if (Array.isArray(anyOf) && anyOf.length === 1 && anyOf[0] && typeof anyOf[0] === 'object') {
    delete obj.anyOf;
    for (const [k, v] of Object.entries(anyOf[0] as Record<string, unknown>)) if (!(k in obj)) obj[k] = v;
  }
  Object.values(obj).forEach(flattenSingleAnyOf);
}

function codesText(codes: readonly number[]): string {
  return `Envelope codes: ${codes.map((c) => `${c} (${MESSAGE_BY_CODE.get(c) ?? '?'})`).join(', ')}.`;
}

/** method + path -> operationId for operations nobody named (routes added later still get a unique one). */
function derivedOperationId(method: string, url: string): string {
  const words = url.split(/[^A-Za-z0-9]+/).filter((w) => w && w !== 'audio' && w !== 'api' && w !== 'v1' && w !== 'keys');
  return [method.toLowerCase(), ...words.map((w) => w[0]!.toUpperCase() + w.slice(1))].join('');
}

/**
 * The document's extra knowledge per operation, filled as routes are registered, and the swagger transform
 * that applies it: operationId, typed data, request example and codes. One per server instance.
 */
export class OpenApiDocs {
  private readonly ops = new Map<string, OperationDoc>();

  set(method: string, url: string, doc: OperationDoc): void {
    this.ops.set(`${method.toUpperCase()} ${url}`, doc);
  }

  readonly transform = (input: Parameters<typeof jsonSchemaTransform>[0]): ReturnType<typeof jsonSchemaTransform> => {
    const out = jsonSchemaTransform(input);
    // A wildcard path (/files/*) is no OpenAPI path template: its links are handed out in answers, not called by name.
    if (out.url.includes('*')) return { ...out, schema: { hide: true } };
    out.schema ??= {};
    const schema = out.schema as Record<string, unknown> & { hide?: boolean; response?: Record<string, unknown>; body?: Record<string, unknown> };
    if (schema.hide) return out;
    const method = String(input.route?.method ?? 'GET');
    const doc = this.ops.get(`${method.toUpperCase()} ${out.url}`);
    schema.operationId = doc?.operationId ?? schema.operationId ?? derivedOperationId(method, out.url);
    const has2xx = Object.keys(schema.response ?? {}).some((k) => /^2/.test(k));
    schema.response = {
      ...(has2xx ? {} : { 200: { description: 'Success: see the operation description and docs/api.md' } }),
      ...schema.response,
      '4XX': out.url.startsWith('/v1/') ? OPENAI_ERROR : REFUSED_BEFORE_RUNNING,
    };
    if (!doc) return out;
    if (doc.data) schema.response = { ...schema.response, 200: { description: codesText(doc.codes), ...envelopeJson(doc.data, doc.codes) } };
    flattenSingleAnyOf(schema.body);
    flattenSingleAnyOf(schema.response);
    if (doc.example !== undefined && schema.body) schema.body = { ...schema.body, example: doc.example };
    schema.description = [typeof schema.description === 'string' ? schema.description : '', codesText(doc.codes)].filter(Boolean).join('\n\n');
    return out;
  };
}
