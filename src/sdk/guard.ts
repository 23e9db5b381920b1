import { SoundryError } from './errors.js';

/** One request's abort when the server goes silent for too long. */
export interface RequestGuard {
  signal: AbortSignal;
  /** Something arrived (answer headers, body bytes) or left (upload bytes taken by the socket): the silence restarts. */
  touch(): void;
  /** The request is over: no timer left behind. */
  done(): void;
  /** Why the request was aborted, or null while it was not: that, not fetch's own error, is what to throw. */
  reason(): SoundryError | null;
}

/**
 * A limit on silence, not on duration: a server that accepted the connection and then never answered left the client
 * waiting for ever (found from outside), but a large upload or download that keeps moving may take as long as it needs.
 */
export function guardRequest(o: { silenceMs: number; server: string; what: string }): RequestGuard {
  const controller = new AbortController();
  const seconds = o.silenceMs / 1000;
  const timer =
    o.silenceMs > 0
      ? setTimeout(() => controller.abort(new SoundryError(`No answer from ${o.server} for ${seconds} s (${o.what})`, 'timeout', null, null, { silentSeconds: seconds })), o.silenceMs)
      : null;
  return {
    signal: controller.signal,
    touch: () => void (controller.signal.aborted ? undefined : timer?.refresh()),
    done() {
      if (timer) clearTimeout(timer);
    },
    reason: () => (controller.signal.aborted ? (controller.signal.reason as SoundryError) : null),
  };
}
