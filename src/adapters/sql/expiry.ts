import { sql } from 'kysely';

/** How long a task that finishes is kept at least: its result must be fetchable after it is made. */
export const KEPT_AFTER_FINISHING_MS = 3600_000;

/**
 * A finishing task's expiry: as it was, but at least its TTL (expires_at - created_at) or KEPT_AFTER_FINISHING_MS,
 * whichever is shorter, after `now`. A task that ran or waited past its expiry used to be reaped the moment it
 * finished (found from outside: long separations with a short TASK_TTL_SECONDS, results lost).
 */
export function keptAfterFinishing(now: number) {
  const ttl = sql<number>`(expires_at - created_at)`;
  const least = sql<number>`(case when ${ttl} < ${KEPT_AFTER_FINISHING_MS} then ${ttl} else ${KEPT_AFTER_FINISHING_MS} end)`;
  return sql<number>`(case when expires_at < ${now} + ${least} then ${now} + ${least} else expires_at end)`;
}
