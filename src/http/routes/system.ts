import type { FastifyInstance } from 'fastify';
import type { Metrics } from '../../services/metrics.js';

/** One dependency or part of this node, checked by /healthz; throws (or rejects) when it is not usable. */
export interface HealthCheck {
  name: string;
  /** What to report when it is fine, e.g. 'ok' or the kinds a worker takes. */
  check(): Promise<string>;
}

export interface HealthProbe {
  role: string;
  checks: readonly HealthCheck[];
}

/** A check that hangs must not hang the probe: load balancers call it every few seconds. */
const CHECK_TIMEOUT_MS = 3000;

async function runCheck(c: HealthCheck): Promise<{ ok: boolean; value: string }> {
  let timer: NodeJS.Timeout | undefined;
  try {
    const value = await Promise.race([
      c.check(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS);
      }),
    ]);
    return { ok: true, value };
  } catch (err) {
    return { ok: false, value: `unavailable: ${err instanceof Error ? err.message : String(err)}` };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * /healthz: every dependency of this node's role (database, queue, blob store; workers alive), 503 naming
 * the one that failed. /readyz: whether a load balancer should send requests here now: the same checks, and
 * 503 as soon as the node starts draining (SIGTERM), so it is taken out of rotation before it stops.
 */
export function registerSystemRoutes(app: FastifyInstance, deps: { metrics: Metrics; health: HealthProbe; draining: () => boolean }): void {
  const report = async () => {
    const results = await Promise.all(deps.health.checks.map(async (c) => [c.name, await runCheck(c)] as const));
    const ok = results.every(([, r]) => r.ok);
    return { ok, body: { status: ok ? 'ok' : 'unavailable', role: deps.health.role, ...Object.fromEntries(results.map(([n, r]) => [n, r.value])) } };
  };
  app.get('/healthz', { schema: { operationId: 'getHealth', tags: ['System'], summary: "This node's dependencies (database, queue, blob store, workers): 200 ok or 503 naming the failure" } }, async (_req, reply) => {
    const { ok, body } = await report();
    return reply.status(ok ? 200 : 503).send(body);
  });
  app.get('/readyz', { schema: { operationId: 'getReadiness', tags: ['System'], summary: 'For load balancers: 200 while this node takes requests, 503 while draining or unhealthy' } }, async (_req, reply) => {
    if (deps.draining()) return reply.status(503).send({ status: 'draining', role: deps.health.role });
    const { ok, body } = await report();
    return reply.status(ok ? 200 : 503).send(body);
  });
  app.get('/metrics', { schema: { operationId: 'getMetrics', tags: ['System'], summary: 'Prometheus metrics' } }, async (_req, reply) => {
    reply.header('content-type', deps.metrics.registry.contentType);
    return deps.metrics.registry.metrics();
  });
}
