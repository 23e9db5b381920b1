import pino from 'pino';
import { loadConfig, ConfigError } from './config/config.js';
import { LOG_REDACT } from './app/log-redact.js';
import { StartupRefusal } from './domain/errors.js';

/** However short the grace, requests already running get this long to finish before their connections are cut. */
const MIN_REQUEST_DRAIN_MS = 10_000;

/**
 * The signal handlers exist before anything else starts: a SIGTERM during start-up is remembered, and the
 * start-up stops at its next step (or, once listening, drains as usual) and exits 0, instead of the
 * process dying half-started. The heavy modules are imported after the handlers for the same reason.
 */
let requested: string | null = null;
let onStop: ((signal: string) => void) | null = null;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (onStop) onStop(signal);
    else requested ??= signal;
  });
}

/** Starts the API and/or the workers (ROLE=all|api|worker) and drains gracefully on SIGTERM/SIGINT. */
async function main(): Promise<void> {
  const config = loadConfig(process.env);
  // Asynchronous writes: a line no longer costs the event loop a write() to stdout, and lines logged while one
  // write is under way go out together. Flushed at exit (pino's exit handler), so a crash's last lines stay.
  const logger = pino({ level: config.LOG_LEVEL, base: { service: 'soundry', role: config.ROLE }, redact: LOG_REDACT }, pino.destination({ dest: 1, sync: false }));
  for (const warning of config.warnings) logger.warn(warning);
  onStop = (signal) => {
    if (!requested) logger.info({ signal }, 'stop requested during start-up: stopping at the next step');
    requested ??= signal;
  };
  logger.info('starting');
  const graceMs = config.SHUTDOWN_GRACE_SECONDS * 1000;
  const { buildContainer } = await import('./app/container.js');
  const { buildHttpServer, buildSystemServer } = await import('./http/server.js');
  const { drainOf } = await import('./http/drain.js');

  const container = await buildContainer(config, logger);
  const stopBeforeServing = async (signal: string) => {
    logger.info({ signal }, 'draining');
    await container.close(graceMs);
    logger.info('stopped');
    process.exit(0);
  };
  if (requested) return stopBeforeServing(requested);
  if (config.ROLE !== 'api') await container.startWorkers();
  if (requested) return stopBeforeServing(requested);
  container.reaper.start();

  // A worker node listens too, for /healthz, /readyz and /metrics only (orchestrators probe it).
  const app =
    config.ROLE === 'worker'
      ? await buildSystemServer({ metrics: container.metrics, health: container.health, logger })
      : await buildHttpServer(container.httpDeps());
  if (requested) return stopBeforeServing(requested);
  await app.listen({ host: config.HOST, port: config.PORT });
  logger.info({ url: config.PUBLIC_BASE_URL, role: config.ROLE, ffmpeg: container.media.source, dataDir: config.DATA_DIR }, 'Soundry is listening');

  /**
   * The drain keeps the listener open: new requests get the 100503 envelope (with Connection: close and
   * Retry-After) and /readyz 503, while running tasks finish or go back to the queue (SHUTDOWN_GRACE_SECONDS)
   * and requests already running end. Only then does the listener close.
   */
  let shuttingDown = false;
  const shutdown = async (signal: string) => {
    if (shuttingDown) return logger.info({ signal }, 'already draining');
    shuttingDown = true;
    logger.info({ signal }, 'draining');
    const drain = drainOf(app);
    drain.begin();
    const [, settled] = await Promise.all([container.stopWorkers(graceMs), drain.settled(Math.max(graceMs, MIN_REQUEST_DRAIN_MS))]);
    if (!settled) logger.warn({ requests: drain.inFlight }, 'requests still running after the drain: closing their connections');
    const closed = app.close();
    if (!settled) app.server.closeAllConnections();
    await closed;
    await container.close(graceMs);
    logger.info('stopped');
    process.exit(0);
  };
  onStop = (signal) => void shutdown(signal);
  if (requested) await shutdown(requested);
}

main().catch((err) => {
  if (err instanceof ConfigError) {
    process.stderr.write(`${err.message}\n`);
    process.exit(2);
  }
  if (err instanceof StartupRefusal) {
    process.stderr.write(`Soundry cannot start: ${err.message}\n`);
    process.exit(1);
  }
  process.stderr.write(`Soundry failed to start: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
