import type { Config } from '../config/config.js';
import type { TaskKind } from '../domain/task.js';
import type { KindPolicy, QueuePolicy } from '../ports/queue.js';

/**
 * Short kinds finish in seconds; long kinds can hold a slot for minutes or hours. Each kind gets
 * its own slots on a worker, and short kinds are sized apart, so a backlog of long tasks never
 * makes a two-second TTS task wait behind it.
 */
const DURATION: Readonly<Record<TaskKind, 'short' | 'long'>> = {
  tts: 'short',
  podcast_script: 'short',
  separation: 'long',
  enhance: 'long',
  podcast_audio: 'long',
};

/** The per-kind queue policy of a worker, from config. Both queue adapters consume with it. */
export function queuePolicy(config: Pick<Config, 'WORKER_CONCURRENCY' | 'WORKER_SHORT_CONCURRENCY' | 'MAX_ATTEMPTS' | 'LEASE_SECONDS' | 'RETRY_BACKOFF_MS' | 'RETRY_BACKOFF_MAX_MS'>): QueuePolicy {
  const policy = (duration: 'short' | 'long'): KindPolicy => ({
    concurrency: duration === 'short' ? config.WORKER_SHORT_CONCURRENCY : config.WORKER_CONCURRENCY,
    maxAttempts: config.MAX_ATTEMPTS,
    leaseMs: config.LEASE_SECONDS * 1000,
    backoff: { initialMs: config.RETRY_BACKOFF_MS, maxMs: Math.max(config.RETRY_BACKOFF_MS, config.RETRY_BACKOFF_MAX_MS) },
  });
  return {
    tts: policy(DURATION.tts),
    podcast_script: policy(DURATION.podcast_script),
    separation: policy(DURATION.separation),
    enhance: policy(DURATION.enhance),
    podcast_audio: policy(DURATION.podcast_audio),
  };
}
