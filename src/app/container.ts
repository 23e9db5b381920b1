import { existsSync, readFileSync } from 'node:fs';
import { ensureDirectory } from './directories.js';
import { isDatabaseUnavailable } from '../adapters/sql/unavailable.js';
import { unavailableStore } from './unavailable-stores.js';
import type { Logger } from 'pino';
import { ConfigError, type Config } from '../config/config.js';
import { isSeparationEngineChoice } from '../engines/separation/select.js';
import { NEURAL_PRESETS } from '../engines/separation/onnx/presets.js';
import type { TaskKind } from '../domain/task.js';
import { SqlAccountStore } from '../adapters/sql/account-store.js';
import type { AccountStore } from '../ports/accounts.js';
import { queuePolicy } from './queue-policy.js';
import { checkDisk } from '../adapters/disk-space.js';
import { MemoryLimits } from '../adapters/memory-limits.js';
import { CachedAccountStore } from '../adapters/cached-account-store.js';
import { RedisLimits } from '../adapters/redis/limits.js';
import { SignedBlobUrls } from '../http/signed-blob-urls.js';
import { ReusedBlobUrls } from '../adapters/reused-blob-urls.js';
import { buildBlobs, checkBucketAtStart, patientBlobs } from './blob-stores.js';
import { createUrlSigner } from '../http/signed-url.js';
import { resolveMediaTools } from '../media/ffmpeg.js';
import { AuthService } from '../services/auth.js';
import { TaskService } from '../services/tasks.js';
import { Metrics } from '../services/metrics.js';
import { partialUploadAgeMs, RetentionReaper } from '../services/retention.js';
import { AdminService } from '../services/admin.js';
import { ttsApiKind, TtsKindApi } from '../kinds/tts/api.js';
import { TtsHandler } from '../kinds/tts/worker.js';
import { OpenAiSpeech } from '../kinds/tts/openai.js';
import { separationApiKind, SeparationKindApi } from '../kinds/separation/api.js';
import { SeparationHandler } from '../kinds/separation/worker.js';
import { enhanceApiKind, EnhanceKindApi } from '../kinds/enhance/api.js';
import { ENHANCE_OVER_LIMIT_HINT } from '../kinds/enhance/contract.js';
import type { KindInputLimits } from '../domain/input-limits.js';
import { EnhanceHandler } from '../kinds/enhance/worker.js';
import { podcastScriptApiKind, PodcastScriptKindApi } from '../kinds/podcast-script/api.js';
import { PodcastScriptHandler } from '../kinds/podcast-script/worker.js';
import { podcastAudioApiKind, PodcastAudioKindApi } from '../kinds/podcast-audio/api.js';
import { PodcastAudioHandler } from '../kinds/podcast-audio/worker.js';
import { checkApiKinds, checkWorkerKinds, type ApiKinds, type WorkerKinds } from '../kinds/registry.js';
import { InputFetcher, type InputFetcherOptions } from '../jobs/input-fetcher.js';
import { scriptEngines } from './script-engines.js';
import { JobRunner } from '../jobs/runner.js';
import { EngineThreadPool } from './thread-pool.js';
import type { TaskHandler } from '../jobs/handler.js';
import { ttsVoices, voiceSampleRenderer } from './tts-voices.js';
import { chooseExecutionProviders, probeExecutionProviders } from '../engines/onnx-provider.js';
import { loadCatalog } from '../models/catalog-file.js';
import { loadOrCreateSecret } from './secret.js';
import { createHmac } from 'node:crypto';
import { checkTarget } from '../media/fetch-input.js';
import { SqlWebhookStore } from '../adapters/sql/webhook-store.js';
import { GuardedWebhookSender } from '../adapters/http-webhook-sender.js';
import { WebhookDispatcher } from '../services/webhooks.js';
import { success } from '../http/envelope.js';
import { openServerDatabase } from './database.js';
import { taskStoreAndQueue } from './task-database.js';
import { ProcessTempDirs } from './temp-dirs.js';
import { DataDirLock } from './data-dir-lock.js';
import type { HttpDeps } from '../http/server.js';
import type { HealthProbe } from '../http/routes/system.js';

export type Container = Awaited<ReturnType<typeof buildContainer>>;

function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

/** The composition root: the only place where adapters are chosen and constructed. */
/** Constructor options that are not configuration: only tests pass any (main.ts passes none). */
export interface ContainerOptions {
  /**
   * Test seam for the SSRF guard of worker fetches (inputurl, podcast sources, captions): a resolver the test
   * controls and where a checked address is really connected to. No env var or config key can set it.
   */
  testOnlyInputNetwork?: InputFetcherOptions['testOnly'];
}

export async function buildContainer(config: Config, logger: Logger, options: ContainerOptions = {}) {
  if (!isSeparationEngineChoice(config.SEPARATION_ENGINE)) {
    throw new ConfigError(
      `Invalid configuration:\n  SEPARATION_ENGINE: must be auto, builtin or one of ${NEURAL_PRESETS.map((p) => p.name).join(', ')}`,
    );
  }
  await ensureDirectory(config.DATA_DIR, 'DATA_DIR');
  await ensureDirectory(config.TMP_DIR, 'DATA_DIR');
  await checkBucketAtStart(config, logger);
  // A bad MODELS_CATALOG_FILE stops start-up with its reason rather than silently trusting nothing (or everything).
  const catalog = [...loadCatalog(config.MODELS_CATALOG_FILE)];
  const onnx = await probeExecutionProviders(config.ONNX_EXECUTION_PROVIDER, chooseExecutionProviders(config.ONNX_EXECUTION_PROVIDER)).catch((err: unknown) => {
    throw new ConfigError((err as Error).message);
  });
  if (onnx.fellBack) logger.warn({ providers: onnx.providers }, `ONNX execution provider: ${onnx.reason}`);
  else logger.info({ providers: onnx.providers }, `ONNX execution provider: ${onnx.reason}`);
  if (config.PODCAST_MUSIC_FILE && !existsSync(config.PODCAST_MUSIC_FILE)) {
    throw new Error(`PODCAST_MUSIC_FILE does not exist: ${config.PODCAST_MUSIC_FILE}`);
  }
  // One embedded server per data folder: a second one on it would take the first one's tasks.
  const dataLock = config.ROLE === 'all' && !config.DATABASE_URL ? await takeDataDirLock(config.DATA_DIR, logger) : null;
  const { db, sqlite, pgPool, checkpoints } = await openServerDatabase(config, {
    applicationName: `soundry-${config.ROLE}`,
    connectTimeoutMs: config.DATABASE_CONNECT_TIMEOUT_SECONDS * 1000,
    queryTimeoutMs: config.DATABASE_QUERY_TIMEOUT_SECONDS * 1000,
    onIdleError: (err) => logger.warn({ err }, 'an idle PostgreSQL connection failed; the pool opens a new one'),
  }, (message) => logger.warn({ err: message }, 'a SQLite checkpoint failed; the next one retries'));
  // This process's own temp folder; folders of processes that died (kill -9) are removed now.
  const temp = await ProcessTempDirs.claim(config.TMP_DIR, logger);
  const keyCache = config.API_KEY_CACHE_MS > 0 ? new CachedAccountStore(new SqlAccountStore(db), { ttlMs: config.API_KEY_CACHE_MS }) : null;
  const accounts: AccountStore = keyCache ?? new SqlAccountStore(db);
  // A task this process's workers charged changes a balance the key cache holds: the next create must see it.
  const { tasks, queue, storeEnqueues, close: closeTaskDatabase } = taskStoreAndQueue(config, db, { sqlite, pgPool }, logger, keyCache ? (accountId) => keyCache.forget(accountId) : undefined);
  const secret = await loadOrCreateSecret(`${config.DATA_DIR}/signing.key`, config.SIGNING_SECRET);
  const signer = createUrlSigner({ secret, baseUrl: config.PUBLIC_BASE_URL, ttlSeconds: config.FILE_URL_TTL_SECONDS });
  const built = buildBlobs(config, new SignedBlobUrls(signer, config.PUBLIC_BASE_URL));
  const { blobs, s3 } = built;
  // A finished task polled again gets the link it was given while that still fits, not a new signature each poll.
  const urls = new ReusedBlobUrls(built.urls);
  const sharedBlobs = blobs;
  // With REDIS_URL the per-key limits are shared by every API node; without, counted in this
  // process. A worker serves no API requests: no connection for it.
  const limits = config.REDIS_URL && config.ROLE !== 'worker'
    ? await RedisLimits.connect(config.REDIS_URL, { prefix: `${config.REDIS_KEY_PREFIX}limits:`, logger })
    : new MemoryLimits();
  const auth = new AuthService(accounts, limits, {
    rateLimit: config.DEFAULT_RATE_LIMIT,
    concurrency: config.DEFAULT_CONCURRENCY,
    authFailures: config.AUTH_FAILURE_LIMIT > 0
      ? { failures: config.AUTH_FAILURE_LIMIT, windowSeconds: config.AUTH_FAILURE_WINDOW_SECONDS, blockSeconds: config.AUTH_FAILURE_BLOCK_SECONDS }
      : null,
  });
  const media = resolveMediaTools({ preferSystem: config.PREFER_SYSTEM_FFMPEG });
  const { voices, voiceModels } = ttsVoices(config, catalog);
  // ENHANCE_MAX_BYTES as the upload route (`?kind=enhance`) and the create hold to it; the worker enforces it again.
  const enhanceInput = { maxBytes: config.ENHANCE_MAX_BYTES, setting: 'ENHANCE_MAX_BYTES', hint: ENHANCE_OVER_LIMIT_HINT };
  const inputLimits: KindInputLimits = { enhance: enhanceInput };
  const ttsApi = new TtsKindApi(voices, { maxChars: config.TTS_MAX_CHARS, defaultFormat: config.TTS_DEFAULT_FORMAT });
  const apiKinds: ApiKinds = checkApiKinds({
    tts: ttsApiKind(ttsApi),
    separation: separationApiKind(new SeparationKindApi(urls)),
    enhance: enhanceApiKind(new EnhanceKindApi({ limit: enhanceInput, blobs, urls })),
    podcast_script: podcastScriptApiKind(new PodcastScriptKindApi(voices, { textMaxChars: config.PODCAST_TEXT_MAX_CHARS })),
    podcast_audio: podcastAudioApiKind(new PodcastAudioKindApi(voices, tasks, { scriptMaxChars: config.PODCAST_SCRIPT_MAX_CHARS })),
  });
  const metrics = new Metrics(queue);
  let runner: JobRunner | null = null;
  let pool: EngineThreadPool | null = null;
  // One pool per process, made on first use: workers need it, and the API needs it for voice samples.
  const enginePool = () =>
    (pool ??= new EngineThreadPool({ threads: config.WORKER_THREADS, env: {
      modelsDir: config.MODELS_DIR,
      separationEngine: config.SEPARATION_ENGINE,
      tmpDir: temp.dir,
      catalog,
      autoPull: config.MODELS_AUTO_PULL,
      ...(config.MODELS_BASE_URL ? { modelsBaseUrl: config.MODELS_BASE_URL } : {}),
      executionProviders: onnx.providers,
      nice: config.ENGINE_NICE,
      ...(config.ENHANCE_THREADS ? { enhanceThreads: config.ENHANCE_THREADS } : {}),
    }, onThreadError: (err) => logger.error({ err }, 'an engine thread failed outside a task (it could not start, or crashed)') }));
  const voiceSamples = voiceSampleRenderer(enginePool, media.ffmpeg);
  // Synchronous speech runs on this node's own engine threads (the short lane), like voice samples.
  const openAiSpeech = new OpenAiSpeech({ voices, tts: ttsApi, threads: enginePool, accounts, ffmpeg: media.ffmpeg, models: voiceModels });
  const taskService = new TaskService({
    tasks,
    queue,
    storeEnqueues,
    kinds: Object.fromEntries(Object.values(apiKinds).map((k) => [k.route.kind, k.api])),
    taskTtlMs: config.TASK_TTL_SECONDS * 1000,
    urls,
    fileUrlTtlSeconds: config.FILE_URL_TTL_SECONDS,
    // Checked at create with the input URLs' SSRF rules; checked again (and pinned) at every delivery.
    checkCallbackUrl: (url) => checkTarget(url, { allowPrivate: config.ALLOW_PRIVATE_URLS }, AbortSignal.timeout(5000)),
    // Only a create adds work: waking the workers after every answer (polls included) made each poll of an
    // idle ROLE=all server also try to claim a job, which cost more than the poll itself (bench/results/http.md).
    onCreated: () => runner?.notify(),
    onEnqueueFailed: (err) => logger.warn({ err }, 'a create could not queue its task: answered 503'),
  });
  // One secret per deployment: WEBHOOK_SECRET, else derived from the URL-signing secret (the same on every node).
  const webhookSecret = config.WEBHOOK_SECRET ?? createHmac('sha256', secret).update('soundry-webhook-v1').digest('hex');
  let webhooks: WebhookDispatcher | null = null;
  // What /healthz checks on this node: the database, queue, blob store and local disk always; the workers where this node runs them.
  const health: HealthProbe = {
    role: config.ROLE,
    checks: [
      // Shared by every node in the scale-out profile (/readyz stays 200 "degraded" when one fails: system.ts).
      { name: 'database', check: async () => (await tasks.ping(), 'ok'), shared: !!config.DATABASE_URL },
      { name: 'queue', check: async () => (await queue.ping(), config.REDIS_URL ? 'redis' : 'sql'), shared: !!(config.REDIS_URL || config.DATABASE_URL) },
      { name: 'blobs', check: async () => (await blobs.ping(), config.BLOB_STORE), shared: config.BLOB_STORE === 's3' },
      // DATA_DIR's disk, where every process writes its temp files (and, embedded, the database and result files).
      { name: 'disk', check: () => checkDisk(temp.dir) },
      ...(config.ROLE === 'api'
        ? // An API node starts threads only for voice samples and /v1/audio/speech: reported, not started, here.
          [{ name: 'engines', check: async () => pool?.known() ?? 'not started' }]
        : [
            {
              name: 'workers',
              check: async () => {
                // Draining is not a failure: a liveness probe that failed here would kill the node mid-drain (/readyz says 503).
                if (runner?.isStopping()) return 'draining';
                if (!runner?.isAlive()) throw new Error('workers are not running');
                return runner.kinds.join(',');
              },
            },
            // Threads that cannot start (a broken install) otherwise showed only as every task failing.
            { name: 'engines', check: () => enginePool().health() },
          ]),
    ],
  };
  const version = packageVersion();
  const reaper = new RetentionReaper({ tasks, blobs, logger }, config.REAPER_INTERVAL_SECONDS * 1000, config.TASK_TTL_SECONDS * 1000, partialUploadAgeMs(config.UPLOAD_TIMEOUT_SECONDS * 1000));
  // Partial uploads wait for the reaper's age rule, since another process may be writing one. Holding the lock with no
  // other live process in TMP_DIR (the lock does not keep out an API node beside us), nothing else writes in DATA_DIR
  // and this process takes no upload before it listens: every partial there now was left by a process that died, and
  // goes now (kill -9 and an immediate restart leave them seconds old). In the background: it walks every upload.
  const partialsSweptAtStart = dataLock && (await temp.othersAlive()) === 0
    ? reaper.removePartialUploads(Date.now()).catch((err: unknown) => (logger.warn({ err }, 'could not sweep partial uploads'), 0))
    : Promise.resolve(0);

  return {
    config,
    logger,
    db,
    tasks,
    accounts,
    queue,
    blobs,
    urls,
    signer,
    auth,
    media,
    voices,
    metrics,
    taskService,
    reaper,
    /** The start-up removal of partial uploads (files removed), where it runs. */
    partialsSweptAtStart,
    version,
    health,
    /** The key callbacks are signed with (docs/api.md "Webhooks"). */
    webhookSecret,
    /** This process's temp folder under TMP_DIR (removed at close; swept by the next start if the process dies). */
    tempDir: temp.dir,
    /** Everything the HTTP layer needs, so main and the tests build the same server. */
    httpDeps(): HttpDeps {
      return {
        auth,
        limits,
        tasks: taskService,
        kinds: Object.values(apiKinds),
        voices,
        metrics,
        health,
        blobs,
        urls,
        signer,
        logger,
        uploadMaxBytes: config.UPLOAD_MAX_BYTES,
        uploadKindLimits: inputLimits,
        timeouts: {
          headersMs: config.HEADERS_TIMEOUT_SECONDS * 1000,
          requestMs: config.REQUEST_TIMEOUT_SECONDS * 1000,
          uploadMs: config.UPLOAD_TIMEOUT_SECONDS * 1000,
          uploadMinBytesPerSecond: config.UPLOAD_MIN_BYTES_PER_SECOND,
          uploadRateWindowMs: config.UPLOAD_RATE_WINDOW_SECONDS * 1000,
        },
        uploadTtlSeconds: config.TASK_TTL_SECONDS,
        tmpDir: temp.dir,
        publicBaseUrl: config.PUBLIC_BASE_URL,
        version,
        voiceSamples,
        openAiSpeech,
        corsOrigins: config.CORS_ORIGINS,
        admin: config.ADMIN_TOKEN ? new AdminService(accounts, tasks, limits, config.ADMIN_TOKEN) : null,
        storeUnavailable: unavailableStore,
      };
    },
    /** Worker side: engine threads and the job runner (ROLE=all|worker). */
    async startWorkers(): Promise<JobRunner> {
      // Result uploads wait out an object store that cannot be reached, as task records wait out the database.
      const blobs = patientBlobs(config, sharedBlobs, () => runner?.isStopping() ?? true, logger);
      const input = new InputFetcher(
        { blobs, urls },
        {
          allowPrivate: config.ALLOW_PRIVATE_URLS,
          maxBytes: config.INPUT_MAX_BYTES,
          timeoutMs: config.INPUT_TIMEOUT_SECONDS * 1000,
          minBytesPerSecond: config.INPUT_MIN_BYTES_PER_SECOND,
          rateWindowMs: config.INPUT_RATE_WINDOW_SECONDS * 1000,
          ...(options.testOnlyInputNetwork ? { testOnly: options.testOnlyInputNetwork } : {}),
        },
      );
      const threads = enginePool();
      // Starts a thread now, so that /healthz knows whether threads start before the first task needs one.
      threads.health().catch(() => {});
      const { generator, localLlm } = scriptEngines(config, catalog, threads);
      const workerKinds: WorkerKinds = checkWorkerKinds({
        tts: new TtsHandler({ threads, blobs, ffmpeg: media.ffmpeg, models: voiceModels }),
        enhance: new EnhanceHandler({
          threads,
          blobs,
          input,
          media,
          modelsDir: config.MODELS_DIR,
          maxSeconds: config.ENHANCE_MAX_SECONDS,
          maxBytes: config.ENHANCE_MAX_BYTES,
          creditsPerMinute: config.CREDITS_PER_MINUTE,
          targetLufs: config.ENHANCE_LOUDNESS_LUFS,
          denoiser: config.ENHANCE_DENOISER,
          dereverb: config.ENHANCE_DEREVERB,
          dereverbCpuMaxSeconds: config.ENHANCE_DEREVERB_CPU_MAX_SECONDS,
        }),
        separation: new SeparationHandler({ threads, blobs, input, media, maxSeconds: config.SEPARATION_MAX_SECONDS, creditsPerMinute: config.CREDITS_PER_MINUTE }),
        podcast_script: new PodcastScriptHandler({
          input,
          voices,
          generator,
          ...(localLlm ? { localLlm } : {}),
          avatarUrl: (id) => `${config.PUBLIC_BASE_URL}/assets/voices/${id}.svg`,
          asr: {
            threads, media, modelsDir: config.MODELS_DIR, catalog, maxSeconds: config.ASR_MAX_SECONDS,
            autoPull: config.MODELS_AUTO_PULL, ...(config.MODELS_BASE_URL ? { baseUrl: config.MODELS_BASE_URL } : {}),
          },
          scriptMaxChars: config.PODCAST_SCRIPT_MAX_CHARS,
          extractLimits: { maxSeconds: config.SOURCE_EXTRACT_MAX_SECONDS, memoryMb: config.SOURCE_EXTRACT_MEMORY_MB, maxMb: config.SOURCE_MAX_MB },
        }),
        podcast_audio: new PodcastAudioHandler({
          threads,
          blobs,
          ffmpeg: media.ffmpeg,
          target: { integrated: config.PODCAST_LOUDNESS_LUFS, truePeak: -1.5, range: 11 },
          musicFile: config.PODCAST_MUSIC_FILE,
          modelsDir: config.MODELS_DIR,
          models: voiceModels,
        }),
      });
      // A worker takes only WORKER_KINDS (e.g. separation and enhance on a GPU box).
      const handlers = new Map<TaskKind, TaskHandler>(config.WORKER_KINDS.map((kind) => [kind, workerKinds[kind]]));
      runner = new JobRunner(
        { queue, tasks, handlers, metrics, logger, blobs, storeUnavailable: isDatabaseUnavailable },
        { kinds: config.WORKER_KINDS, policy: queuePolicy(config), tmpDir: temp.dir, storeOutageMs: config.STORE_OUTAGE_SECONDS * 1000 },
      );
      await runner.start();
      // Callbacks go out from the worker side, after the task's final state is committed.
      webhooks = new WebhookDispatcher(
        {
          store: new SqlWebhookStore(db),
          sender: new GuardedWebhookSender({ allowPrivate: config.ALLOW_PRIVATE_URLS }),
          payload: async (id) => {
            const presented = await taskService.presentById(id);
            return presented ? { kind: presented.kind, body: success(presented.data) } : null;
          },
          secret: webhookSecret,
          logger,
        },
        {
          pollMs: Math.max(200, config.POLL_INTERVAL_MS),
          retryBaseMs: config.WEBHOOK_RETRY_BASE_MS,
          maxAttempts: config.WEBHOOK_MAX_ATTEMPTS,
          timeoutMs: config.WEBHOOK_TIMEOUT_SECONDS * 1000,
        },
      );
      webhooks.start();
      return runner;
    },
    /** The drain's worker half: no new jobs; running ones finish within graceMs or go back to the queue. */
    async stopWorkers(graceMs: number): Promise<void> {
      reaper.stop();
      await webhooks?.stop();
      await runner?.stop(graceMs);
    },
    async close(graceMs: number): Promise<void> {
      reaper.stop();
      await webhooks?.stop();
      await runner?.stop(graceMs);
      await pool?.destroy();
      await queue.close();
      await limits.close();
      closeTaskDatabase();
      await checkpoints?.close();
      await db.destroy();
      s3?.destroy();
      await temp.release();
      await dataLock?.release();
    },
  };
}

function takeDataDirLock(dataDir: string, logger: Logger): Promise<DataDirLock> {
  return DataDirLock.take(dataDir, logger);
}
