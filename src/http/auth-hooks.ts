import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, concurrencyLimited } from '../domain/errors.js';
import type { RequestLimits } from '../ports/limits.js';
import type { AuthService, Caller, Operation } from '../services/auth.js';

declare module 'fastify' {
  interface FastifyRequest {
    caller: Caller | null;
  }
}

/** The spec names the header `api-key`, one table says `api_key`: accept both. */
export function apiKeyOf(request: FastifyRequest): string | undefined {
  const value = request.headers['api-key'] ?? request.headers['api_key'];
  const key = Array.isArray(value) ? value[0] : value;
  return key?.trim() || undefined;
}

/**
 * onRequest hook: authenticates before the body is even parsed, so bad keys never cost parsing,
 * then holds one of the key's in-flight slots (101004) until the response is closed, whether it
 * finished or the client went away (an upload holds its slot for as long as its body streams).
 */
export function requireApiKey(auth: AuthService, limits: RequestLimits, op: Operation) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const caller = await auth.authenticate(apiKeyOf(request), op, request.ip);
    const ticket = await limits.enter(caller.key.id, caller.concurrency);
    if (!ticket) throw concurrencyLimited(caller.concurrency, 1);
    request.caller = caller;
    // A client gone while the checks awaited has already had its 'close': free the slot now.
    if (reply.raw.closed) void limits.leave(ticket);
    else reply.raw.once('close', () => void limits.leave(ticket));
  };
}

export function callerOf(request: FastifyRequest): Caller {
  if (!request.caller) throw new AppError('INVALID_API_KEY');
  return request.caller;
}
