import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/config.js';

const base = { DATA_DIR: '/tmp/soundry-config-test' };
const failure = (env: Record<string, string>) => {
  try {
    loadConfig({ ...base, ...env });
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected the configuration to be refused');
};

describe('deployment configuration', () => {
  it('a blank number is unset, not 0: PORT= listens on 8080, not on a random port', () => {
    const c = loadConfig({ ...base, PORT: '', WORKER_CONCURRENCY: ' ', LLM_MAX_TOKENS: '', ENHANCE_LOUDNESS_LUFS: '' });
    expect([c.PORT, c.LLM_MAX_TOKENS, c.ENHANCE_LOUDNESS_LUFS]).toEqual([8080, undefined, -16]);
    expect(loadConfig({ ...base, PORT: '0' }).PORT).toBe(0);
    expect(failure({ PORT: 'abc' })).toMatch(/PORT/);
  });

  it('defaults to the embedded profile with every kind', () => {
    const c = loadConfig(base);
    expect(c.ROLE).toBe('all');
    expect(c.DATABASE_URL).toBeUndefined();
    expect(c.BLOB_STORE).toBe('local');
    expect(c.WORKER_KINDS).toEqual(['separation', 'tts', 'enhance', 'podcast_script', 'podcast_audio']);
    expect(c.warnings).toEqual([]);
  });

  it('podcast scripts: the local model by default, an endpoint only with its URL', () => {
    const c = loadConfig(base);
    expect([c.LLM_ENGINE, c.LLM_LOCAL_MODEL, c.LLM_GPU, c.LLM_CONTEXT_TOKENS, c.LLM_MAX_TOKENS]).toEqual(['auto', 'qwen2.5-1.5b-instruct', 'auto', 16_384, undefined]);
    expect(c.LLM_THREADS).toBeGreaterThanOrEqual(1);
    expect(c.LLM_THREADS).toBeLessThanOrEqual(4);
    expect(failure({ LLM_ENGINE: 'openai' })).toMatch(/LLM_ENGINE=openai needs LLM_BASE_URL/);
    expect(failure({ LLM_ENGINE: 'gpt' })).toMatch(/LLM_ENGINE/);
  });

  it('refuses a worker on SQLite, naming DATABASE_URL', () => {
    expect(failure({ ROLE: 'worker' })).toMatch(/ROLE=worker needs DATABASE_URL/);
  });

  it('refuses a shared database without a shared signing secret', () => {
    expect(failure({ DATABASE_URL: 'postgres://u@db/soundry' })).toMatch(/SIGNING_SECRET must be set/);
    expect(() => loadConfig({ ...base, DATABASE_URL: 'postgres://u@db/soundry', SIGNING_SECRET: 'x'.repeat(32) })).not.toThrow();
  });

  it('refuses S3 without a bucket and half a credential pair', () => {
    expect(failure({ BLOB_STORE: 's3' })).toMatch(/BLOB_STORE=s3 needs S3_BUCKET/);
    expect(failure({ BLOB_STORE: 's3', S3_BUCKET: 'b', S3_ACCESS_KEY_ID: 'k' })).toMatch(/go together/);
  });

  it('refuses URLs of the wrong scheme and unknown worker kinds', () => {
    expect(failure({ DATABASE_URL: 'mysql://db' })).toMatch(/DATABASE_URL: must be a postgres/);
    expect(failure({ REDIS_URL: 'http://r' })).toMatch(/REDIS_URL: must be a redis/);
    expect(failure({ WORKER_KINDS: 'separation,karaoke' })).toMatch(/unknown kind karaoke/);
  });

  it('a silent Redis is given up after 3 s unless told otherwise; never without a limit', () => {
    expect(loadConfig(base).REDIS_COMMAND_TIMEOUT_SECONDS).toBe(3);
    expect(loadConfig({ ...base, REDIS_COMMAND_TIMEOUT_SECONDS: '10' }).REDIS_COMMAND_TIMEOUT_SECONDS).toBe(10);
    expect(failure({ REDIS_COMMAND_TIMEOUT_SECONDS: '0' })).toMatch(/REDIS_COMMAND_TIMEOUT_SECONDS/);
  });

  it('takes a subset of kinds for a GPU worker', () => {
    const c = loadConfig({ ...base, ROLE: 'worker', DATABASE_URL: 'postgres://u@db/s', SIGNING_SECRET: 'y'.repeat(32), BLOB_STORE: 's3', S3_BUCKET: 'b', WORKER_KINDS: 'separation, enhance' });
    expect(c.WORKER_KINDS).toEqual(['separation', 'enhance']);
  });

  it('warns about setups that work but are probably unintended', () => {
    expect(loadConfig({ ...base, ROLE: 'api' }).warnings.join('\n')).toMatch(/ROLE=api on SQLite/);
    const worker = { ...base, ROLE: 'worker', DATABASE_URL: 'postgres://u@db/s', SIGNING_SECRET: 'y'.repeat(32), BLOB_STORE: 's3', S3_BUCKET: 'b' };
    expect(loadConfig(worker).warnings.join('\n')).toMatch(/ROLE=worker without PUBLIC_BASE_URL/);
    expect(loadConfig({ ...worker, PUBLIC_BASE_URL: 'https://audio.example.com' }).warnings).toEqual([]);
  });

  it('warns when HOST listens everywhere but the links handed out would say 127.0.0.1', () => {
    const open = loadConfig({ ...base, HOST: '0.0.0.0', PORT: '9000' });
    expect(open.PUBLIC_BASE_URL).toBe('http://127.0.0.1:9000');
    expect(open.warnings.join('\n')).toMatch(/HOST=0\.0\.0\.0 without PUBLIC_BASE_URL: result and upload links will be http:\/\/127\.0\.0\.1:9000/);
    expect(loadConfig({ ...base, HOST: '::' }).warnings.join('\n')).toMatch(/HOST=:: without PUBLIC_BASE_URL/);
    expect(loadConfig({ ...base, HOST: '0.0.0.0', PUBLIC_BASE_URL: 'http://audio.lan:8080' }).warnings).toEqual([]);
    expect(loadConfig({ ...base, HOST: '127.0.0.1' }).warnings).toEqual([]);
  });
});
