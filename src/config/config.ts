import { z } from 'zod';
import { resolve } from 'node:path';
import { cpus } from 'node:os';
import { findPreset, NEURAL_PRESETS } from '../engines/separation/onnx/presets.js';

const bool = z
  .enum(['0', '1', 'true', 'false', 'yes', 'no', ''])
  .transform((v) => v === '1' || v === 'true' || v === 'yes');
const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

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
  FILE_URL_TTL_SECONDS: int(60, 30 * 86400).default(86400),
  TASK_TTL_SECONDS: int(60, 365 * 86400).default(7 * 86400),
  REAPER_INTERVAL_SECONDS: int(1, 86400).default(300),
  DEFAULT_RATE_LIMIT: z.coerce.number().positive().default(10),
  DEFAULT_CONCURRENCY: int(1, 10_000).default(5),
  CREDITS_PER_MINUTE: int(1, 1_000_000).default(1),
  TTS_MAX_CHARS: int(1, 1_000_000).default(5000),
  TTS_DEFAULT_FORMAT: z.enum(['mp3', 'wav']).default('mp3'),
  WORKER_CONCURRENCY: int(1, 64).default(2),
  WORKER_THREADS: int(1, 64).default(Math.max(1, Math.min(4, cpus().length))),
  LEASE_SECONDS: int(2, 3600).default(30),
  MAX_ATTEMPTS: int(1, 20).default(3),
  POLL_INTERVAL_MS: int(10, 60_000).default(250),
  SHUTDOWN_GRACE_SECONDS: int(0, 3600).default(30),
  ALLOW_PRIVATE_URLS: bool.default(false),
  INPUT_MAX_BYTES: int(1, 2 ** 40).default(2 * 1024 ** 3),
  INPUT_TIMEOUT_SECONDS: int(1, 86400).default(600),
  UPLOAD_MAX_BYTES: int(1, 2 ** 40).default(1024 ** 3),
  PREFER_SYSTEM_FFMPEG: bool.default(true),
  /** Any OpenAI-compatible chat endpoint (Ollama, llama.cpp, vLLM, OpenAI) for podcast scripts; unset = built-in generator. */
  LLM_BASE_URL: z.string().url().optional(),
  LLM_MODEL: z.string().min(1).default('llama3.1'),
  LLM_API_KEY: z.string().optional(),
  ENHANCE_MAX_SECONDS: int(1, 86400).default(10_800),
  ENHANCE_MAX_BYTES: int(1, 2 ** 40).default(10 * 1024 * 1024),
  ENHANCE_LOUDNESS_LUFS: z.coerce.number().min(-40).max(-5).default(-16),
  /** remove_noise engine: auto picks DTLN on dry input, GTCRN otherwise, RNNoise when no model is installed. */
  ENHANCE_DENOISER: z.enum(['auto', 'rnnoise', 'dtln', 'gtcrn', 'spectral']).default('auto'),
  SEPARATION_MAX_SECONDS: int(1, 86400).default(3600),
  /** Longest audio/video podcast source that speech recognition transcribes: it holds an engine thread for the whole file. */
  ASR_MAX_SECONDS: int(1, 86400).default(3600),
  /** auto: best installed neural model per model type, else built-in; builtin; or one model name (docs/api.md). */
  SEPARATION_ENGINE: z
    .string()
    .min(1)
    .default('auto')
    .refine((v) => v === 'auto' || v === 'builtin' || findPreset(v) !== undefined, {
      message: `must be auto, builtin or one of ${NEURAL_PRESETS.map((p) => p.name).join(', ')}`,
    }),
  /** An audio file (operator's own, licensed for this use) laid under podcast episodes as intro/outro bed with ducking. */
  PODCAST_MUSIC_FILE: z.string().min(1).optional(),
  PODCAST_LOUDNESS_LUFS: z.coerce.number().min(-40).max(-5).default(-16),
});

export type Env = z.infer<typeof EnvSchema>;

export interface Config extends Omit<Env, 'PUBLIC_BASE_URL' | 'MODELS_DIR' | 'DATA_DIR'> {
  DATA_DIR: string;
  MODELS_DIR: string;
  PUBLIC_BASE_URL: string;
  DB_PATH: string;
  BLOB_DIR: string;
  TMP_DIR: string;
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
  });
}
