import { Redis } from 'ioredis';
import type { Logger } from 'pino';

export interface RedisSilenceWatchOptions {
  /** The workers' Redis: the address named in the log, and where a probe opens a connection of its own. */
  redisUrl: string;
  /** A PING with no answer within this long: that connection is silent. */
  timeoutMs: number;
  logger: Logger;
  /** How often each connection is asked; default 1 s. */
  everyMs?: number;
  /**
   * Called when the watched connections are found dead while Redis answers a new one: the connections the watch cannot
   * ask (the workers' blocking ones) went the same way and are reset by the owner.
   */
  alsoReopen?: () => Promise<void>;
}

/**
 * Watches the workers' own connections (their non-blocking commands: fetching, lock renewals, completions) with a PING
 * that must be answered within timeoutMs. BullMQ resets a worker's blocking connection by itself when its wait outlives
 * its timeout, but nothing watched the other: on a Redis that went silent without closing it (frozen, a partition that
 * drops packets, a failover that leaves it dead) its commands waited for TCP keep-alive (minutes), without a word.
 * ioredis' commandTimeout cannot do this: BullMQ duplicates these options for the blocking connection, where it would
 * cut every wait for jobs longer than it.
 *
 * A silent connection is only opened again when a new one is answered: then it is dead for good and ioredis sends its
 * unanswered commands again on the new one. While Redis itself does not answer (frozen, cut off) they are left as they
 * are, so that nothing Redis will still read from them (a fetch, a completion) is sent a second time.
 */
export class RedisSilenceWatch {
  private readonly address: string;
  private readonly everyMs: number;
  private timer: NodeJS.Timeout | null = null;
  private checking = false;
  private silent = false;
  /** Opened again and not answered since: not opened again on every check while the old socket is still closing. */
  private readonly reopened = new Set<Redis>();
  /** A PING not yet answered is waited on again rather than joined by another, so a long outage queues one each. */
  private readonly pings = new Map<Redis, Promise<unknown>>();

  constructor(
    private readonly connections: readonly Redis[],
    private readonly opts: RedisSilenceWatchOptions,
  ) {
    this.address = redisAddress(opts.redisUrl);
    this.everyMs = opts.everyMs ?? 1000;
  }

  start(): void {
    this.timer ??= setInterval(() => void this.check(), this.everyMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private async check(): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    try {
      const answered = await Promise.all(this.connections.map((c) => within(this.ping(c), this.opts.timeoutMs)));
      this.connections.forEach((c, i) => answered[i] && this.reopened.delete(c));
      const mute = this.connections.filter((_, i) => !answered[i]);
      if (mute.length === 0) {
        if (this.silent) this.opts.logger.info({ redis: this.address }, `Redis at ${this.address} answers the workers again`);
        this.silent = false;
        return;
      }
      if (!this.silent) {
        this.silent = true;
        this.opts.logger.warn(
          { redis: this.address },
          `Redis at ${this.address} has not answered the workers within ${this.opts.timeoutMs} ms: no jobs are fetched, settled or kept leased until it does`,
        );
      }
      // Only a connection with a socket: one waiting to reconnect is left to ioredis' own retries (disconnecting it
      // would cancel them).
      const dead = mute.filter((c) => (c.status === 'ready' || c.status === 'connect') && !this.reopened.has(c));
      if (dead.length === 0 || !(await this.answersNewConnection()) || !this.timer) return;
      this.opts.logger.info({ redis: this.address, connections: dead.length }, `Redis at ${this.address} answers a new connection: opening the workers' silent ones again`);
      for (const c of dead) {
        this.reopened.add(c);
        c.disconnect(true);
      }
      await this.opts.alsoReopen?.();
    } finally {
      this.checking = false;
    }
  }

  private ping(c: Redis): Promise<unknown> {
    let answer = this.pings.get(c);
    if (!answer) {
      answer = c.ping().finally(() => this.pings.delete(c));
      this.pings.set(c, answer);
    }
    return answer;
  }

  /** A connection of its own, opened for the question and closed after it: Redis answers, only the old ones are dead. */
  private async answersNewConnection(): Promise<boolean> {
    const probe = new Redis(this.opts.redisUrl, {
      lazyConnect: true,
      connectTimeout: this.opts.timeoutMs,
      commandTimeout: this.opts.timeoutMs,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      enableOfflineQueue: false,
    });
    probe.on('error', () => undefined);
    try {
      return await within(probe.connect().then(() => probe.ping()), this.opts.timeoutMs);
    } finally {
      probe.disconnect();
    }
  }
}

/** Host and port of a Redis URL, for the log: the URL itself may carry a password. */
export function redisAddress(redisUrl: string): string {
  const url = new URL(redisUrl);
  return `${url.hostname}:${url.port || 6379}`;
}

/** Whether `answer` settles successfully within ms; it is left to settle (or not) on its own. */
async function within(answer: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([answer.then(() => true, () => false), late]);
  } finally {
    clearTimeout(timer);
  }
}
