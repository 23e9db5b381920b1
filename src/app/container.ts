import { existsSync, readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import type { TaskKind } from '../domain/task.js';
import { openSqlite } from '../adapters/sqlite/database.js';
import { SqlTaskStore } from '../adapters/sql/task-store.js';
import { SqlAccountStore } from '../adapters/sql/account-store.js';
import { SqlJobQueue } from '../adapters/sql/queue.js';
import { LocalBlobStore } from '../adapters/local-blob-store.js';
import { MemoryRateLimiter } from '../adapters/memory-rate-limiter.js';
import { createUrlSigner } from '../http/signed-url.js';
import { encodeAudio, resolveMediaTools } from '../media/ffmpeg.js';
import { AuthService } from '../services/auth.js';
import { TaskService } from '../services/tasks.js';
import { Metrics } from '../services/metrics.js';
import { RetentionReaper } from '../services/retention.js';
import type { KindApi } from '../services/kinds/kind-api.js';
import { TtsKindApi } from '../services/kinds/tts.js';
import { PodcastAudioKindApi, PodcastScriptKindApi } from '../services/kinds/podcast.js';
import { PodcastScriptHandler } from '../jobs/handlers/podcast-script.js';
import { PodcastAudioHandler } from '../jobs/handlers/podcast-audio.js';
import { InputFetcher } from '../jobs/input-fetcher.js';
import { SeparationKindApi } from '../services/kinds/separation.js';
import { SeparationHandler } from '../jobs/handlers/separation.js';
import { EnhanceKindApi } from '../services/kinds/enhance.js';
import { EnhanceHandler } from '../jobs/handlers/enhance.js';
import { BuiltinScriptGenerator } from '../engines/podcast/builtin-generator.js';
import { LlmScriptGenerator } from '../engines/podcast/llm-generator.js';
import { JobRunner } from '../jobs/runner.js';
import { EngineThreadPool } from '../jobs/threads/pool.js';
import type { TtsThreadOutput } from '../jobs/threads/engine-thread.js';
import { TtsHandler } from '../jobs/handlers/tts.js';
import type { TaskHandler } from '../jobs/handler.js';
import { createVoiceLibrary } from '../engines/tts/setup.js';
import { loadOrCreateSecret } from './secret.js';
import type { HttpDeps } from '../http/server.js';

export type Container = Awaited<ReturnType<typeof buildContainer>>;

function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

/** The composition root: the only place where adapters are chosen and constructed. */
export async function buildContainer(config: Config, logger: Logger) {
  await mkdir(config.TMP_DIR, { recursive: true });
  if (config.PODCAST_MUSIC_FILE && !existsSync(config.PODCAST_MUSIC_FILE)) {
    throw new Error(`PODCAST_MUSIC_FILE does not exist: ${config.PODCAST_MUSIC_FILE}`);
  }
  const db = await openSqlite(config.DB_PATH);
  const tasks = new SqlTaskStore(db);
  const accounts = new SqlAccountStore(db);
  const queue = new SqlJobQueue(db);
  const blobs = new LocalBlobStore(config.BLOB_DIR);
  const secret = await loadOrCreateSecret(`${config.DATA_DIR}/signing.key`, config.SIGNING_SECRET);
  const signer = createUrlSigner({ secret, baseUrl: config.PUBLIC_BASE_URL, ttlSeconds: config.FILE_URL_TTL_SECONDS });
  const auth = new AuthService(accounts, new MemoryRateLimiter(), {
    rateLimit: config.DEFAULT_RATE_LIMIT,
    concurrency: config.DEFAULT_CONCURRENCY,
  });
  const media = resolveMediaTools({ preferSystem: config.PREFER_SYSTEM_FFMPEG });
  const voices = createVoiceLibrary({ modelsDir: config.MODELS_DIR });
  const kinds = new Map<TaskKind, KindApi>([
    ['tts', new TtsKindApi(voices, { maxChars: config.TTS_MAX_CHARS, defaultFormat: config.TTS_DEFAULT_FORMAT }) as KindApi],
    ['separation', new SeparationKindApi() as KindApi],
    ['enhance', new EnhanceKindApi() as KindApi],
    ['podcast_script', new PodcastScriptKindApi(voices) as KindApi],
    ['podcast_audio', new PodcastAudioKindApi(voices, tasks) as KindApi],
  ]);
  const metrics = new Metrics(queue);
  let runner: JobRunner | null = null;
  let pool: EngineThreadPool | null = null;
  // One pool per process, made on first use: workers need it, and the API needs it for voice samples.
  const enginePool = () =>
    (pool ??= new EngineThreadPool({ threads: config.WORKER_THREADS, workerData: { modelsDir: config.MODELS_DIR, separationEngine: config.SEPARATION_ENGINE } }));
  const voiceSamples = {
    async render(voice: { id: number; language: string }, text: string, path: string) {
      const out = await enginePool().run<TtsThreadOutput>(
        'tts',
        { text, language: voice.language, voiceId: voice.id, emotion: 0, speed: 1 },
        { signal: AbortSignal.timeout(120_000), onProgress: () => {} },
      );
      await encodeAudio({ sampleRate: out.sampleRate, channels: [out.samples] }, path, { ffmpeg: media.ffmpeg, format: 'mp3' });
    },
  };
  const taskService = new TaskService({
    tasks,
    queue,
    kinds,
    taskTtlMs: config.TASK_TTL_SECONDS * 1000,
    fileUrl: (key, notAfterMs) =>
      signer.sign(key, Math.max(1, Math.min(config.FILE_URL_TTL_SECONDS, Math.floor((notAfterMs - Date.now()) / 1000)))),
  });
  const health = {
    async check() {
      await tasks.ping();
      if (config.ROLE !== 'api' && !runner?.isAlive()) throw new Error('workers are not running');
      return { database: 'ok', workers: config.ROLE === 'api' ? 'remote' : `${runner?.kinds.join(',')}` };
    },
  };
  const version = packageVersion();
  const reaper = new RetentionReaper({ tasks, blobs, logger }, config.REAPER_INTERVAL_SECONDS * 1000, config.TASK_TTL_SECONDS * 1000);

  return {
    config,
    logger,
    db,
    tasks,
    accounts,
    queue,
    blobs,
    signer,
    auth,
    media,
    voices,
    metrics,
    taskService,
    reaper,
    version,
    health,
    /** Everything the HTTP layer needs, so main and the tests build the same server. */
    httpDeps(): HttpDeps {
      return {
        auth,
        tasks: taskService,
        voices,
        metrics,
        health,
        blobs,
        signer,
        logger,
        uploadMaxBytes: config.UPLOAD_MAX_BYTES,
        uploadTtlSeconds: config.TASK_TTL_SECONDS,
        tmpDir: config.TMP_DIR,
        publicBaseUrl: config.PUBLIC_BASE_URL,
        version,
        voiceSamples,
      };
    },
    /** Worker side: engine threads and the job runner (ROLE=all|worker). */
    async startWorkers(): Promise<JobRunner> {
      const input = new InputFetcher(
        { blobs, signer },
        {
          publicBaseUrl: config.PUBLIC_BASE_URL,
          allowPrivate: config.ALLOW_PRIVATE_URLS,
          maxBytes: config.INPUT_MAX_BYTES,
          timeoutMs: config.INPUT_TIMEOUT_SECONDS * 1000,
        },
      );
      const generator = config.LLM_BASE_URL
        ? new LlmScriptGenerator({ baseUrl: config.LLM_BASE_URL, model: config.LLM_MODEL, apiKey: config.LLM_API_KEY })
        : new BuiltinScriptGenerator();
      const handlers = new Map<TaskKind, TaskHandler>([
        ['tts', new TtsHandler({ pool: enginePool(), blobs, ffmpeg: media.ffmpeg })],
        [
          'enhance',
          new EnhanceHandler({
            pool: enginePool(),
            blobs,
            input,
            media,
            modelsDir: config.MODELS_DIR,
            maxSeconds: config.ENHANCE_MAX_SECONDS,
            maxBytes: config.ENHANCE_MAX_BYTES,
            creditsPerMinute: config.CREDITS_PER_MINUTE,
            targetLufs: config.ENHANCE_LOUDNESS_LUFS,
            denoiser: config.ENHANCE_DENOISER,
          }),
        ],
        [
          'separation',
          new SeparationHandler({ pool: enginePool(), blobs, input, media, maxSeconds: config.SEPARATION_MAX_SECONDS, creditsPerMinute: config.CREDITS_PER_MINUTE }),
        ],
        [
          'podcast_script',
          new PodcastScriptHandler({
            input,
            voices,
            generator,
            avatarUrl: (id) => `${config.PUBLIC_BASE_URL}/assets/voices/${id}.svg`,
            asr: { pool: enginePool(), media, modelsDir: config.MODELS_DIR, maxSeconds: config.ASR_MAX_SECONDS },
          }),
        ],
        [
          'podcast_audio',
          new PodcastAudioHandler({
            pool: enginePool(),
            blobs,
            ffmpeg: media.ffmpeg,
            target: { integrated: config.PODCAST_LOUDNESS_LUFS, truePeak: -1.5, range: 11 },
            musicFile: config.PODCAST_MUSIC_FILE,
            modelsDir: config.MODELS_DIR,
          }),
        ],
      ]);
      runner = new JobRunner(
        { queue, tasks, handlers, metrics, logger },
        {
          concurrency: config.WORKER_CONCURRENCY,
          leaseMs: config.LEASE_SECONDS * 1000,
          maxAttempts: config.MAX_ATTEMPTS,
          pollIntervalMs: config.POLL_INTERVAL_MS,
          tmpDir: config.TMP_DIR,
        },
      );
      await runner.start();
      return runner;
    },
    async close(graceMs: number): Promise<void> {
      reaper.stop();
      await runner?.stop(graceMs);
      await pool?.destroy();
      await queue.close();
      await db.destroy();
    },
  };
}
