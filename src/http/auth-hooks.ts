import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../domain/errors.js';
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

/** Requests in flight per key, for the concurrency limit (101004). Per process. */
export class InFlightRequests {
  private readonly counts = new Map<string, number>();

  enter(keyId: string, limit: number): boolean {
    const n = this.counts.get(keyId) ?? 0;
    if (n >= limit) return false;
    this.counts.set(keyId, n + 1);
    return true;
  }

  leave(keyId: string): void {
    const n = (this.counts.get(keyId) ?? 1) - 1;
    if (n <= 0) this.counts.delete(keyId);
    else this.counts.set(keyId, n);
  }
}

/** onRequest hook: authenticates before the body is even parsed, so bad keys never cost parsing. */
export function requireApiKey(auth: AuthService, inFlight: InFlightRequests, op: Operation) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const caller = await auth.authenticate(apiKeyOf(request), op);
    if (!inFlight.enter(caller.key.id, caller.concurrency)) throw new AppError('CONCURRENCY_LIMITED');
    request.caller = caller;
    reply.raw.once('close', () => inFlight.leave(caller.key.id));
  };
}

export function callerOf(request: FastifyRequest): Caller {
  if (!request.caller) throw new AppError('INVALID_API_KEY');
  return request.caller;
}
