import type { FastifyInstance } from 'fastify';
import type { Metrics } from '../../services/metrics.js';

/** One dependency or part of this node, checked by /healthz; throws (or rejects) when it is not usable. */
export interface HealthCheck {
  name: string;
  /** What to report when it is fine, e.g. 'ok' or the kinds a worker takes. */
  check(): Promise<string>;
  /**
   * A dependency every node shares (PostgreSQL, Redis, S3 in the scale-out profile): when it fails, it fails on every
   * node alike, so it does not take this node out of /readyz. Found from outside: a Redis or S3 outage made every API
   * node unready at once, and the load balancer then had none left for the polls and downloads that did not need it;
   * the node itself answers what needs the store with 503 and Retry-After.
   */
  shared?: boolean;
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
 * the one that failed. /readyz: whether a load balancer should send requests here now: 503 when this node's own
 * part fails (disk, workers, engines, a store only it uses), and as soon as the node starts draining (SIGTERM), so it
 * is taken out of rotation before it stops; a shared store's failure answers 200 `degraded`.
 */
export function registerSystemRoutes(app: FastifyInstance, deps: { metrics: Metrics; health: HealthProbe; draining: () => boolean }): void {
  const report = async () => {
    const results = await Promise.all(deps.health.checks.map(async (c) => [c, await runCheck(c)] as const));
    const ok = results.every(([, r]) => r.ok);
    // Ready unless something of this node's own fails: a shared dependency's failure leaves it "degraded" but serving.
    const ready = results.every(([c, r]) => r.ok || c.shared === true);
    const status = ok ? 'ok' : ready ? 'degraded' : 'unavailable';
    return { ok, ready, body: { status, role: deps.health.role, ...Object.fromEntries(results.map(([c, r]) => [c.name, r.value])) } };
  };
  app.get('/healthz', { schema: { operationId: 'getHealth', tags: ['System'], summary: "This node's dependencies (database, queue, blob store, workers): 200 ok or 503 naming the failure" } }, async (_req, reply) => {
    const { ok, body } = await report();
    return reply.status(ok ? 200 : 503).send({ ...body, status: ok ? 'ok' : 'unavailable' });
  });
  app.get('/readyz', { schema: { operationId: 'getReadiness', tags: ['System'], summary: "For load balancers: 200 while this node takes requests (also 'degraded': a shared store is down on every node), 503 while draining or when this node's own part fails" } }, async (_req, reply) => {
    if (deps.draining()) return reply.status(503).send({ status: 'draining', role: deps.health.role });
    const { ready, body } = await report();
    return reply.status(ready ? 200 : 503).send(body);
  });
  app.get('/metrics', { schema: { operationId: 'getMetrics', tags: ['System'], summary: 'Prometheus metrics' } }, async (_req, reply) => {
    reply.header('content-type', deps.metrics.registry.contentType);
    return deps.metrics.registry.metrics();
  });
}
