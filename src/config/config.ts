import { z } from 'zod';
import { resolve } from 'node:path';
import { cpus } from 'node:os';
import { TASK_KINDS, type TaskKind } from '../domain/task.js';
import { DEFAULT_PODCAST_SCRIPT_MAX_CHARS, DEFAULT_PODCAST_TEXT_MAX_CHARS } from '../domain/podcast-limits.js';
import { KEY_LIMITS } from '../domain/key-limits.js';

const bool = z
  .enum(['0', '1', 'true', 'false', 'yes', 'no', ''])
  .transform((v) => v === '1' || v === 'true' || v === 'yes');
/**
 * A blank value (`PORT=` in a shell, an env file or a compose file) is unset, so its default applies: coerced, it was
 * 0, and `PORT=` listened on a random port (found from outside). Hence the default or optional inside the pipe.
 */
const blankAsUnset = (v: unknown) => (typeof v === 'string' && v.trim() === '' ? undefined : v);
const numberSetting = (n: z.ZodCoercedNumber) => ({
  default: (value: number) => z.preprocess(blankAsUnset, n.default(value)),
  optional: () => z.preprocess(blankAsUnset, n.optional()),
});
const int = (min: number, max: number) => numberSetting(z.coerce.number().int().min(min).max(max));
const num = (min: number, max: number) => numberSetting(z.coerce.number().min(min).max(max));

/** Every environment variable Soundry reads, with its default. The only place process.env is parsed. */
const EnvSchema = z.object({
  ROLE: z.enum(['all', 'api', 'worker']).default('all'),
  HOST: z.string().min(1).default('127.0.0.1'),
  PORT: int(0, 65535).default(8080),
  PUBLIC_BASE_URL: z.string().url().optional(),
  DATA_DIR: z.string().min(1).default('./data'),
  MODELS_DIR: z.string().min(1).optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  SIGNING_SECRET: z.string().min(16).optional(),
  /** Opens the admin page and its API (/admin/api/*) to whoever presents it; unset: neither exists. */
  ADMIN_TOKEN: z.string().min(16).optional(),
  FILE_URL_TTL_SECONDS: int(60, 30 * 86400).default(86400),
  TASK_TTL_SECONDS: int(60, 365 * 86400).default(7 * 86400),
  REAPER_INTERVAL_SECONDS: int(1, 86400).default(300),
  DEFAULT_RATE_LIMIT: num(KEY_LIMITS.rateMin, KEY_LIMITS.rateMax).default(10),
  DEFAULT_CONCURRENCY: int(1, 10_000).default(5),
  CREDITS_PER_MINUTE: int(1, 1_000_000).default(1),
  TTS_MAX_CHARS: int(1, 1_000_000).default(5000),
  TTS_DEFAULT_FORMAT: z.enum(['mp3', 'wav']).default('mp3'),
  /** Slots per long kind (separation, enhance, podcast_audio) on one worker: each long kind has its own. */
  WORKER_CONCURRENCY: int(1, 64).default(2),
  /** Slots per short kind (tts, podcast_script), apart from the long kinds' so short tasks never queue behind long ones. */
  WORKER_SHORT_CONCURRENCY: int(1, 64).default(2),
  WORKER_THREADS: int(1, 64).default(Math.max(1, Math.min(4, cpus().length))),
  /** Nice value of the engine threads (Linux): under load the API's own thread gets the cores first. 0: as the process. */
  ENGINE_NICE: int(0, 19).default(10),
  /** A job whose worker stopped renewing its lease (it died) for this long is delivered again (BullMQ: lockDuration). */
  LEASE_SECONDS: int(2, 3600).default(30),
  /** Deliveries of one task that count (transient failures, dead workers; not graceful shutdowns) before it fails. */
  MAX_ATTEMPTS: int(1, 20).default(3),
  /** First retry delay after a transient failure; it doubles with each attempt, up to RETRY_BACKOFF_MAX_MS. */
  RETRY_BACKOFF_MS: int(0, 3_600_000).default(1000),
  RETRY_BACKOFF_MAX_MS: int(0, 86_400_000).default(300_000),
  /**
   * A worker whose task database cannot be reached (a restart, a failover) keeps trying to read or record a task
   * for this long before the attempt counts as failed; 0: it fails at once, as retries did before.
   */
  STORE_OUTAGE_SECONDS: int(0, 86400).default(300),
  /** How often an idle SQL-queue worker looks for jobs (a task created on the same process wakes it at once). */
  POLL_INTERVAL_MS: int(10, 60_000).default(250),
  SHUTDOWN_GRACE_SECONDS: int(0, 3600).default(30),
  ALLOW_PRIVATE_URLS: bool.default(false),
  INPUT_MAX_BYTES: int(1, 2 ** 40).default(2 * 1024 ** 3),
  INPUT_TIMEOUT_SECONDS: int(1, 86400).default(600),
  /**
   * A download (task input, podcast source) must keep arriving at this many bytes per second, averaged over each
   * INPUT_RATE_WINDOW_SECONDS, response headers included, or it fails as stalled (not retried); 0: no floor.
   */
  INPUT_MIN_BYTES_PER_SECOND: int(0, 1_000_000_000).default(1024),
  INPUT_RATE_WINDOW_SECONDS: int(1, 3600).default(30),
  UPLOAD_MAX_BYTES: int(1, 2 ** 40).default(1024 ** 3),
  /**
   * Invalid API keys one client IP may present within AUTH_FAILURE_WINDOW_SECONDS; past it the IP is
   * answered 101003 (with Retry-After) for AUTH_FAILURE_BLOCK_SECONDS. A valid key is never refused for it. 0: off.
   */
  AUTH_FAILURE_LIMIT: int(0, 1_000_000).default(20),
  AUTH_FAILURE_WINDOW_SECONDS: int(1, 86400).default(60),
  AUTH_FAILURE_BLOCK_SECONDS: int(1, 86400).default(60),
  /**
   * How long an API process keeps a found key (and its account) in memory instead of reading it on
   * every request: a key disabled, an account suspended or credits spent by another process (admin
   * CLI, worker, another node) are seen at most this late. 0: read on every request.
   */
  API_KEY_CACHE_MS: int(0, 60_000).default(1000),
  /** The request line and headers must arrive within this (slow clients are answered 408 and cut off). */
  HEADERS_TIMEOUT_SECONDS: int(1, 3600).default(30),
  /** Headers and body of a JSON request must arrive within this. */
  REQUEST_TIMEOUT_SECONDS: int(1, 86400).default(60),
  /** Headers and body of an upload (multipart, up to UPLOAD_MAX_BYTES) must arrive within this. */
  UPLOAD_TIMEOUT_SECONDS: int(1, 86400).default(3600),
  /**
   * An upload must keep arriving at this many bytes per second, averaged over each UPLOAD_RATE_WINDOW_SECONDS:
   * a client dribbling a byte now and then is cut off (408) after one window, not after UPLOAD_TIMEOUT_SECONDS.
   * 0: off.
   */
  UPLOAD_MIN_BYTES_PER_SECOND: int(0, 1_000_000_000).default(1024),
  UPLOAD_RATE_WINDOW_SECONDS: int(1, 3600).default(30),
  PREFER_SYSTEM_FFMPEG: bool.default(true),
  /** Browser origins allowed to call the API (CORS): comma-separated origins, or * for any; unset: no CORS headers. */
  CORS_ORIGINS: z
    .string()
    .optional()
    .transform((v) => (v ?? '').split(',').map((o) => o.trim().replace(/\/+$/, '')).filter(Boolean)),
  /** HMAC key of callback signatures; unset: derived from the URL-signing secret (docs/api.md "Webhooks"). */
  WEBHOOK_SECRET: z.string().min(16).optional(),
  /** Attempts per callback before it is given up (the first one included). */
  WEBHOOK_MAX_ATTEMPTS: int(1, 20).default(8),
  /** Wait before the second attempt; each next waits 3x longer, at most an hour (10 s, 30 s, 90 s, ...). */
  WEBHOOK_RETRY_BASE_MS: int(10, 3_600_000).default(10_000),
  /** One attempt's limit: connect, send, and the receiver's answer. */
  WEBHOOK_TIMEOUT_SECONDS: int(1, 300).default(10),
  /** Any OpenAI-compatible chat endpoint (Ollama, llama.cpp, vLLM, OpenAI) for podcast scripts; unset = the local model (LLM_ENGINE). */
  LLM_BASE_URL: z.string().url().optional(),
  LLM_MODEL: z.string().min(1).default('llama3.1'),
  LLM_API_KEY: z.string().optional(),
  /**
   * Who writes podcast scripts. auto: the LLM_BASE_URL endpoint when set, else the local GGUF model when installed
   * or pullable (MODELS_AUTO_PULL), else the built-in generator; openai, llama or builtin force one (docs/api.md).
   */
  LLM_ENGINE: z.enum(['auto', 'openai', 'llama', 'builtin']).default('auto'),
  /** Catalog name of the local model (kind llm); the composition root checks it exists in the effective catalog. */
  LLM_LOCAL_MODEL: z.string().min(1).default('qwen2.5-1.5b-instruct'),
  /**
   * llama.cpp threads per generation. Default: half the cores, 1 to 4. Its threads meet at a barrier after every
   * layer, so on a host whose cores are busy more threads are slower, not faster (bench/results/podcast-llm.md).
   */
  LLM_THREADS: int(1, 64).default(Math.max(1, Math.min(4, Math.floor(cpus().length / 2)))),
  /** Largest context (prompt plus reply) of one local generation, in tokens: bounds its KV-cache memory. */
  LLM_CONTEXT_TOKENS: int(1024, 131_072).default(16_384),
  /** Cap on the tokens of one local reply; unset: derived from the episode length (docs/api.md). */
  LLM_MAX_TOKENS: int(64, 131_072).optional(),
  /** auto: llama.cpp on CUDA or Vulkan where node-llama-cpp finds one, else CPU; off: CPU only. */
  LLM_GPU: z.enum(['auto', 'off']).default('auto'),
  ENHANCE_MAX_SECONDS: int(1, 86400).default(10_800),
  ENHANCE_MAX_BYTES: int(1, 2 ** 40).default(10 * 1024 * 1024),
  ENHANCE_LOUDNESS_LUFS: num(-40, -5).default(-16),
  /** remove_noise engine: auto picks DTLN on dry input, GTCRN otherwise, RNNoise when no model is installed. */
  ENHANCE_DENOISER: z.enum(['auto', 'deepfilternet3', 'rnnoise', 'dtln', 'gtcrn', 'spectral']).default('auto'),
  /**
   * remove_reverb / studio_sound engine: auto runs the learned model (catalog-dereverb.ts) when installed and, on CPU
   * alone, for input up to ENHANCE_DEREVERB_CPU_MAX_SECONDS (it costs about 7 s per second of audio on 2 cores);
   * learned whatever the length; wpe always the built-in WPE.
   */
  ENHANCE_DEREVERB: z.enum(['auto', 'learned', 'wpe']).default('auto'),
  ENHANCE_DEREVERB_CPU_MAX_SECONDS: int(0, 86400).default(300),
  /** Chunk worker threads of one enhancement run (long files are cut into chunks run side by side; docs/api.md); unset: every core. */
  ENHANCE_THREADS: int(1, 64).optional(),
  SEPARATION_MAX_SECONDS: int(1, 86400).default(3600),
  /** Longest audio/video podcast source that speech recognition transcribes: it holds an engine thread for the whole file. */
  ASR_MAX_SECONDS: int(1, 86400).default(3600),
  /** Podcast sources (pages, documents, feeds) are read in a child process of their own: its wall-clock limit and heap cap. */
  SOURCE_EXTRACT_MAX_SECONDS: int(1, 3600).default(120),
  SOURCE_EXTRACT_MEMORY_MB: int(64, 16384).default(512),
  /** Largest page, document, feed or text file read as a source (media sources are bounded by ASR_MAX_SECONDS instead). */
  SOURCE_MAX_MB: int(1, 4096).default(100),
  /**
   * auto: best installed neural model per model type, else built-in; builtin; or one model name (docs/api.md).
   * Model names are the engines' to know: the composition root checks them (config imports no engine).
   */
  SEPARATION_ENGINE: z.string().min(1).default('auto'),
  /**
   * On by default: a fresh install should get the neural engines without a manual step (docs/models.md). A task
   * whose model is missing downloads it (verified, atomic); if that fails it runs on the built-in engine and says so.
   * Sites without network set it off, so no task waits on a download that cannot succeed.
   */
  MODELS_AUTO_PULL: bool.default(true),
  /** A mirror for every model download: `<base>/<model name>/<file path>` (air-gapped sites). */
  MODELS_BASE_URL: z.string().url().optional(),
  /** JSON of the site's own catalog entries (replacing files of a built-in model, or adding one), docs/models.md. */
  MODELS_CATALOG_FILE: z.string().min(1).optional(),
  /** auto: CUDA when onnxruntime-node's CUDA provider is installed, else CPU (logged at start-up); docs/models.md. */
  ONNX_EXECUTION_PROVIDER: z.enum(['auto', 'cpu', 'cuda']).default('auto'),
  /** An audio file (operator's own, licensed for this use) laid under podcast episodes as intro/outro bed with ducking. */
  PODCAST_MUSIC_FILE: z.string().min(1).optional(),
  PODCAST_LOUDNESS_LUFS: num(-40, -5).default(-16),
  /** Pasted podcast source text (source_type 4), in characters: longer is refused at create (100002). The step is free. */
  PODCAST_TEXT_MAX_CHARS: int(1, 8 * 1024 * 1024).default(DEFAULT_PODCAST_TEXT_MAX_CHARS),
  /** All lines of a podcast script together, in characters: audio create refuses more, script tasks never make more. */
  PODCAST_SCRIPT_MAX_CHARS: int(1, 8 * 1024 * 1024).default(DEFAULT_PODCAST_SCRIPT_MAX_CHARS),
  // Scale-out profile (docs/deploy.md). Unset, Soundry is the embedded profile: SQLite, SQL queue, local disk.
  /** postgres://user:pass@host:5432/db; unset: SQLite under DATA_DIR. */
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// (or postgresql://) URL')
    .optional(),
  /**
   * PostgreSQL: a new connection that is not up within DATABASE_CONNECT_TIMEOUT_SECONDS, or a statement with no answer
   * within DATABASE_QUERY_TIMEOUT_SECONDS, fails (API: 503; workers wait it out, STORE_OUTAGE_SECONDS) instead of
   * waiting for ever on a peer that went silent (a failover, a cut that sends no reset). 0: no limit.
   */
  DATABASE_CONNECT_TIMEOUT_SECONDS: int(0, 3600).default(10),
  DATABASE_QUERY_TIMEOUT_SECONDS: int(0, 86400).default(60),
  /** redis://host:6379 (rediss:// for TLS): BullMQ queues and per-key limits shared by every node; unset: SQL queue, in-memory limits. */
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'must be a redis:// (or rediss://) URL')
    .optional(),
  /**
   * A queue command with no answer from Redis within this long fails (a create answers 503) and its connection is opened
   * again; on a worker, a connection that does not answer a PING within it is reported silent, and opened again when a
   * new one is answered, instead of waiting for TCP keep-alive (minutes) on a peer that went silent.
   */
  REDIS_COMMAND_TIMEOUT_SECONDS: int(1, 300).default(3),
  /** Prefix of Soundry's Redis keys (per-key limits under <prefix>limits:), so deployments can share one Redis. */
  REDIS_KEY_PREFIX: z.string().min(1).default('soundry:'),
  /** BullMQ key prefix (queues are soundry-<kind> under it); on Redis Cluster use a hash tag, e.g. {soundry}. */
  QUEUE_PREFIX: z.string().regex(/^[^:\s]+$/, 'must not contain spaces or colons').default('bull'),
  BLOB_STORE: z.enum(['local', 's3']).default('local'),
  /** Unset: AWS S3 itself; MinIO, R2, Ceph: their endpoint URL. */
  S3_ENDPOINT: z.string().url().optional(),
  S3_BUCKET: z.string().min(1).optional(),
  S3_REGION: z.string().min(1).default('us-east-1'),
  S3_ACCESS_KEY_ID: z.string().min(1).optional(),
  S3_SECRET_ACCESS_KEY: z.string().min(1).optional(),
  /** MinIO and most self-hosted stores need path-style addressing (endpoint/bucket/key). */
  S3_FORCE_PATH_STYLE: bool.default(false),
  /** api: result links are Soundry's signed URLs, streamed from S3 by the API; presigned: S3 presigned GET URLs. */
  S3_URL_MODE: z.enum(['api', 'presigned']).default('api'),
  /** Comma-separated kinds this worker takes (e.g. separation,enhance on a GPU box); unset: every kind. */
  WORKER_KINDS: z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v.trim() === '') return [...TASK_KINDS];
      const kinds = v.split(',').map((k) => k.trim()).filter(Boolean);
      const unknown = kinds.filter((k) => !(TASK_KINDS as readonly string[]).includes(k));
      if (unknown.length) {
        ctx.addIssue({ code: 'custom', message: `unknown kind ${unknown.join(', ')}; kinds are ${TASK_KINDS.join(', ')}` });
        return z.NEVER;
      }
      return [...new Set(kinds)] as TaskKind[];
    }),
  /** Client CLI only (soundry tts/separate/enhance/podcast): the server to talk to. */
  SOUNDRY_URL: z.string().url().default('http://127.0.0.1:8080'),
  /** Client CLI only: the API key it sends (made by `soundry keys create` on the server's DATA_DIR or DATABASE_URL). */
  SOUNDRY_API_KEY: z.string().optional(),
  /**
   * Client CLI only: a request to the server is given up (exit 5) after this many seconds in which nothing arrives:
   * no answer headers, no bytes, no upload progress. On silence, not duration: long transfers and long tasks are
   * fine while bytes and polls keep coming. 0: no limit (the SDK's timeoutSeconds, same default).
   */
  SOUNDRY_TIMEOUT_SECONDS: int(0, 86400).default(30),
});

export type Env = z.infer<typeof EnvSchema>;

export interface Config extends Omit<Env, 'PUBLIC_BASE_URL' | 'MODELS_DIR' | 'DATA_DIR'> {
  DATA_DIR: string;
  MODELS_DIR: string;
  PUBLIC_BASE_URL: string;
  DB_PATH: string;
  BLOB_DIR: string;
  TMP_DIR: string;
  /** Things that work but are probably not what the operator meant; logged at start-up. */
  warnings: readonly string[];
}

export class ConfigError extends Error {}

/** Validates once at start-up; everything downstream receives the frozen result. */
export function loadConfig(env: Record<string, string | undefined>): Config {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n  ${lines.join('\n  ')}`);
  }
  const e = parsed.data;
  const problems = deploymentProblems(e);
  if (problems.length) throw new ConfigError(`Invalid configuration:\n  ${problems.join('\n  ')}`);
  const dataDir = resolve(e.DATA_DIR);
  const hostForUrl = e.HOST === '0.0.0.0' || e.HOST === '::' ? '127.0.0.1' : e.HOST;
  return Object.freeze({
    ...e,
    DATA_DIR: dataDir,
    MODELS_DIR: resolve(e.MODELS_DIR ?? `${dataDir}/models`),
    PUBLIC_BASE_URL: (e.PUBLIC_BASE_URL ?? `http://${hostForUrl}:${e.PORT}`).replace(/\/+$/, ''),
    DB_PATH: `${dataDir}/soundry.db`,
    BLOB_DIR: `${dataDir}/files`,
    TMP_DIR: `${dataDir}/tmp`,
    warnings: deploymentWarnings(e),
  });
}

const ClientEnvSchema = EnvSchema.pick({ SOUNDRY_URL: true, SOUNDRY_API_KEY: true, SOUNDRY_TIMEOUT_SECONDS: true });
export type ClientConfig = z.infer<typeof ClientEnvSchema>;

/**
 * What the client commands read (SOUNDRY_URL, SOUNDRY_API_KEY, SOUNDRY_TIMEOUT_SECONDS), and only that: a server
 * setting of the shell (PORT=abc) made `soundry tts` fail, a bad SOUNDRY_TIMEOUT_SECONDS was exit 1 with zod's words,
 * and an empty one (`SOUNDRY_TIMEOUT_SECONDS=`) read as 0, no limit at all (found from outside). Empty is unset here.
 */
export function loadClientConfig(env: Record<string, string | undefined>): ClientConfig {
  const given = Object.fromEntries(Object.keys(ClientEnvSchema.shape).map((k) => [k, env[k]?.trim() ? env[k] : undefined]));
  const parsed = ClientEnvSchema.safeParse(given);
  if (parsed.success) return parsed.data;
  const said: Record<string, string> = {
    SOUNDRY_URL: 'must be the server\'s URL, e.g. http://127.0.0.1:8080',
    SOUNDRY_TIMEOUT_SECONDS: 'must be a whole number of seconds from 0 (no limit) to 86400, e.g. 30',
  };
  const key = (i: z.core.$ZodIssue) => String(i.path[0]);
  throw new ConfigError(parsed.error.issues.map((i) => `${key(i)} ${said[key(i)] ?? i.message}, got ${JSON.stringify(given[key(i)])}`).join('; '));
}

/** Combinations that cannot work: stop at start-up and say what to set. */
function deploymentProblems(e: Env): string[] {
  const out: string[] = [];
  if (e.ROLE === 'worker' && !e.DATABASE_URL) {
    out.push(
      'ROLE=worker needs DATABASE_URL (postgres://...): SQLite under DATA_DIR is one machine\'s file, so a worker elsewhere never sees the API\'s tasks. For one machine use ROLE=all.',
    );
  }
  if (e.DATABASE_URL && !e.SIGNING_SECRET) {
    out.push(
      'SIGNING_SECRET must be set (the same value, at least 16 characters, on every node) when DATABASE_URL is: result links signed by one node are checked by another.',
    );
  }
  if (e.LLM_ENGINE === 'openai' && !e.LLM_BASE_URL) out.push('LLM_ENGINE=openai needs LLM_BASE_URL (the endpoint up to /chat/completions).');
  if (e.BLOB_STORE === 's3' && !e.S3_BUCKET) out.push('BLOB_STORE=s3 needs S3_BUCKET (and S3_ENDPOINT for MinIO, R2 or Ceph).');
  if (e.BLOB_STORE === 's3' && !e.S3_ACCESS_KEY_ID !== !e.S3_SECRET_ACCESS_KEY) {
    out.push('S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY go together: set both, or neither to use the AWS default credentials.');
  }
  return out;
}

function deploymentWarnings(e: Env): string[] {
  const out: string[] = [];
  if (e.ROLE === 'api' && !e.DATABASE_URL) {
    out.push('ROLE=api on SQLite: only a ROLE=all process sharing this DATA_DIR on this machine runs its tasks.');
  }
  if (e.ROLE !== 'all' && e.BLOB_STORE === 'local') {
    out.push(`ROLE=${e.ROLE} with BLOB_STORE=local: API and workers must share DATA_DIR (${e.DATA_DIR}); set BLOB_STORE=s3 otherwise.`);
  }
  if (e.ROLE === 'worker' && !e.PUBLIC_BASE_URL) {
    out.push(
      "ROLE=worker without PUBLIC_BASE_URL: set it to the API's public address, as on the API nodes. A worker knows the API's upload and result links (inputurl) by it; otherwise it fetches them as foreign URLs, which the SSRF guard refuses on private addresses, and podcast avatar links point at the worker.",
    );
  }
  if ((e.HOST === '0.0.0.0' || e.HOST === '::') && !e.PUBLIC_BASE_URL && e.ROLE !== 'worker') {
    out.push(
      `HOST=${e.HOST} without PUBLIC_BASE_URL: result and upload links will be http://127.0.0.1:${e.PORT}/..., which only this machine can open; set PUBLIC_BASE_URL to the address clients reach (e.g. http://my-host:${e.PORT}).`,
    );
  }
  if (e.ROLE === 'api' && e.DATABASE_URL && !e.REDIS_URL) {
    out.push('ROLE=api without REDIS_URL: rate and concurrency limits are counted per API node, not across them.');
  }
  return out;
}
