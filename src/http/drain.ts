import type { FastifyInstance } from 'fastify';
import { AppError } from '../domain/errors.js';
import { refusal } from './envelope.js';

/**
 * The drain of a server (SIGTERM): the listener stays open, so clients and load balancers get an answer
 * instead of "connection refused", while what was already running finishes.
 */
export interface Drain {
  /**
   * From now on every new request gets the 100503 envelope (HTTP 503, `Connection: close`,
   * `Retry-After`), except /healthz and /metrics, which still answer, and /readyz, which answers 503
   * `draining`. `app.close()` begins it too.
   */
  begin(): void;
  readonly draining: boolean;
  /** Requests admitted before the drain began that are still running. */
  readonly inFlight: number;
  /** Resolves true once no admitted request is running, or false after timeoutMs. */
  settled(timeoutMs: number): Promise<boolean>;
}

/** Seconds a refused client is told to wait: by then a load balancer has another node, or this one is back. */
const DRAIN_RETRY_AFTER_SECONDS = 5;
/** Still answered while draining: probes and monitoring must see the drain, not a refusal. */
const SYSTEM_PATHS = new Set(['/healthz', '/readyz', '/metrics']);
const drains = new WeakMap<FastifyInstance, Drain>();

/** The drain of a server built by buildHttpServer or buildSystemServer. */
export function drainOf(app: FastifyInstance): Drain {
  const drain = drains.get(app);
  if (!drain) throw new Error('this server was not built by buildHttpServer or buildSystemServer');
  return drain;
}

export function installDrain(app: FastifyInstance): Drain {
  let draining = false;
  let inFlight = 0;
  const waiters = new Set<() => void>();
  const done = () => {
    if (--inFlight === 0) for (const w of waiters) w();
  };
  const drain: Drain = {
    begin: () => {
      draining = true;
    },
    get draining() {
      return draining;
    },
    get inFlight() {
      return inFlight;
    },
    settled: (timeoutMs) =>
      new Promise<boolean>((resolve) => {
        if (inFlight === 0) return resolve(true);
        const finish = (ok: boolean) => {
          clearTimeout(timer);
          waiters.delete(wake);
          resolve(ok);
        };
        const wake = () => finish(true);
        const timer = setTimeout(() => finish(false), timeoutMs);
        waiters.add(wake);
      }),
  };
  drains.set(app, drain);
  app.addHook('preClose', async () => drain.begin());
  // The first onRequest hook: refused requests cost nothing else (no auth, no body parsing).
  app.addHook('onRequest', async (request, reply) => {
    if (draining && !SYSTEM_PATHS.has(request.url.split('?')[0]!)) {
      return reply
        .status(503)
        .header('connection', 'close')
        .header('retry-after', String(DRAIN_RETRY_AFTER_SECONDS))
        .send(refusal(new AppError('SERVICE_UNAVAILABLE')));
    }
    inFlight++;
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      socket?.removeListener('close', end);
      done();
    };
    reply.raw.once('close', end);
    // A request pipelined behind another waits with its answer queued and no socket of its own; should the connection
    // close first (a refused upload before it), Node never closes that answer: the drain waited its whole grace for
    // it (found from outside). Its connection's close ends it.
    const socket = reply.raw.socket ? null : request.raw.socket;
    socket?.once('close', end);
  });
  return drain;
}
