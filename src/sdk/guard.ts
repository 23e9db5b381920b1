import { SoundryError } from './errors.js';

/** One request's abort: when the server goes silent for too long, or when the caller cancels. */
export interface RequestGuard {
  signal: AbortSignal;
  /** Something arrived (answer headers, body bytes) or left (upload bytes taken by the socket): the silence restarts. */
  touch(): void;
  /** The request is over: no timer left behind, no listener on the caller's signal. */
  done(): void;
  /** Why the request was aborted (timeout, cancel), or null while it was not: that, not fetch's own error, is what to throw. */
  reason(): SoundryError | null;
}

/** The caller's abort reason as the SDK's error, so a Ctrl-C reads as 'cancelled' whatever the caller aborted with. */
export function cancelledError(reason: unknown): SoundryError {
  return reason instanceof SoundryError ? reason : new SoundryError('Cancelled', 'cancelled');
}

/**
 * A limit on silence, not on duration: a server that accepted the connection and then never answered left the client
 * waiting for ever (found from outside), but a large upload or download that keeps moving may take as long as it needs.
 */
export function guardRequest(o: {
  silenceMs: number;
  server: string;
  what: string;
  cancel?: AbortSignal | undefined;
  /**
   * More silence allowed now, in ms (an upload: the bytes the system has taken but may still be sending, see
   * Transport.upload). Read when the limit runs out, not before.
   */
  allowanceMs?: () => number;
}): RequestGuard {
  const controller = new AbortController();
  const seconds = o.silenceMs / 1000;
  let last = Date.now();
  const expire = () => {
    const extra = o.allowanceMs?.() ?? 0;
    const left = last + o.silenceMs + extra - Date.now();
    if (left > 0) {
      timer = setTimeout(expire, left);
      return;
    }
    const more = extra > 0 ? `, and ${Math.round(extra / 1000)} s more for what the system was still sending` : '';
    controller.abort(new SoundryError(`No answer from ${o.server} for ${seconds} s${more} (${o.what})`, 'timeout', null, null, { silentSeconds: seconds }));
  };
  let timer: NodeJS.Timeout | null = o.silenceMs > 0 ? setTimeout(expire, o.silenceMs) : null;
  const onCancel = () => controller.abort(cancelledError(o.cancel?.reason));
  if (o.cancel?.aborted) onCancel();
  else o.cancel?.addEventListener('abort', onCancel, { once: true });
  return {
    signal: controller.signal,
    touch() {
      if (controller.signal.aborted || !timer) return;
      last = Date.now();
      // A timer that fires early (set for an allowance's remainder) finds `last` moved and waits on.
      timer.refresh();
    },
    done() {
      if (timer) clearTimeout(timer);
      o.cancel?.removeEventListener('abort', onCancel);
    },
    reason: () => (controller.signal.aborted ? cancelledError(controller.signal.reason) : null),
  };
}
