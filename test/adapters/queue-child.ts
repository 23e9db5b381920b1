import type { QueuePolicy } from '../../src/ports/queue.js';
import type { TaskKind } from '../../src/domain/task.js';
import { openFromEnv } from './queue-backends.js';

/**
 * A consumer that dies: it takes one job, tells the parent, and then never finishes (the
 * parent kills it with SIGKILL), so its lease is never renewed, released nor acknowledged.
 * Opened from the environment by queue-contract.ts.
 */
const env = Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined));
const { queue } = await openFromEnv(env);
const policy = JSON.parse(env.QUEUE_CHILD_POLICY!) as QueuePolicy;
await queue.consume([env.QUEUE_CHILD_KIND as TaskKind], {
  run(job) {
    process.send?.({ taskId: job.taskId, attempt: job.attempt });
    return new Promise(() => {});
  },
  async exhausted() {},
}, policy);
process.send?.({ ready: true });
