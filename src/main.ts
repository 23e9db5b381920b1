import pino from 'pino';
import { loadConfig, ConfigError } from './config/config.js';
import { buildContainer } from './app/container.js';
import { buildHttpServer } from './http/server.js';

/** Starts the API and/or the workers (ROLE=all|api|worker) and drains gracefully on SIGTERM/SIGINT. */
async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const logger = pino({ level: config.LOG_LEVEL, base: { service: 'soundry', role: config.ROLE } });
  const container = await buildContainer(config, logger);
  const runner = config.ROLE === 'api' ? null : await container.startWorkers();
  container.reaper.start();

  const app =
    config.ROLE === 'worker'
      ? null
      : await buildHttpServer(container.httpDeps());
  if (app) {
    if (runner) app.addHook('onResponse', async () => runner.notify());
    await app.listen({ host: config.HOST, port: config.PORT });
    logger.info({ url: config.PUBLIC_BASE_URL, ffmpeg: container.media.source, dataDir: config.DATA_DIR }, 'Soundry is listening');
  }

  let shuttingDown = false;
  const shutdown = async (signal: string) => {
    if (shuttingDown) return;
    shuttingDown = true;
    logger.info({ signal }, 'draining');
    await app?.close();
    await container.close(config.SHUTDOWN_GRACE_SECONDS * 1000);
    logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((err) => {
  process.stderr.write(`Soundry failed to start: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
