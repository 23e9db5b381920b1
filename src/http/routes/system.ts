import type { FastifyInstance } from 'fastify';
import type { Metrics } from '../../services/metrics.js';

export interface HealthProbe {
  /** Throws when the service cannot take work. */
  check(): Promise<{ database: string; workers: string }>;
}

export function registerSystemRoutes(app: FastifyInstance, deps: { metrics: Metrics; health: HealthProbe }): void {
  app.get('/healthz', { schema: { tags: ['System'], summary: 'Ready to take work (database reachable, workers alive)' } }, async (_req, reply) => {
    try {
      return { status: 'ok', ...(await deps.health.check()) };
    } catch (err) {
      return reply.status(503).send({ status: 'unavailable', reason: (err as Error).message });
    }
  });
  app.get('/metrics', { schema: { tags: ['System'], summary: 'Prometheus metrics' } }, async (_req, reply) => {
    reply.header('content-type', deps.metrics.registry.contentType);
    return deps.metrics.registry.metrics();
  });
}
