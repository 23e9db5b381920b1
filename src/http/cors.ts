import type { FastifyInstance } from 'fastify';

/** Headers a browser client may send: the spec's key header, OpenAI's bearer token, JSON. */
const ALLOWED_HEADERS = 'api-key, api_key, authorization, content-type';
/** Headers a browser client may read: what tells it when to retry, and the speech route's own. */
const EXPOSED_HEADERS = 'retry-after, x-ratelimit-limit, x-ratelimit-remaining, x-ratelimit-reset, x-ratelimit-concurrency-limit, x-soundry-credits, x-soundry-voice, x-soundry-engine, x-soundry-engine-note, content-length';
const PREFLIGHT_MAX_AGE_SECONDS = 600;

/**
 * CORS for CORS_ORIGINS (docs/api.md "CORS"): listed origins (or any, with `*`) get the headers on every
 * answer, refusals included, so a browser can read them; a preflight is answered here before routing. Other
 * origins get no CORS headers, and the browser keeps the answer from the page. Keys travel in headers,
 * never cookies: no Allow-Credentials.
 */
export function installCors(app: FastifyInstance, origins: readonly string[]): void {
  if (origins.length === 0) return;
  const any = origins.includes('*');
  const allowed = new Set(origins);
  app.addHook('onRequest', async (request, reply) => {
    const origin = request.headers.origin;
    if (!origin) return;
    const ok = any || allowed.has(origin);
    const preflight = request.method === 'OPTIONS' && request.headers['access-control-request-method'] !== undefined;
    if (ok) {
      void reply.header('access-control-allow-origin', any ? '*' : origin).header('access-control-expose-headers', EXPOSED_HEADERS);
    }
    // Answers differ by Origin: caches must keep them apart.
    if (!any) void reply.header('vary', 'Origin');
    if (!preflight) return;
    if (ok) {
      void reply
        .header('access-control-allow-methods', 'GET, HEAD, POST, OPTIONS')
        .header('access-control-allow-headers', ALLOWED_HEADERS)
        .header('access-control-max-age', String(PREFLIGHT_MAX_AGE_SECONDS));
    }
    return reply.status(204).send();
  });
}
