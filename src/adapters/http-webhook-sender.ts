import { guardedPost } from '../media/fetch-input.js';
import type { WebhookSender } from '../ports/webhooks.js';

/**
 * Webhook POSTs through the same SSRF guard as input URLs: the address is checked again at every attempt
 * (DNS may have changed since the create) and the connection pinned to it; redirects are not followed.
 */
export class GuardedWebhookSender implements WebhookSender {
  constructor(private readonly opts: { allowPrivate: boolean }) {}

  async post(url: string, body: Buffer, headers: Record<string, string>, timeoutMs: number): Promise<number> {
    const signal = AbortSignal.timeout(timeoutMs);
    const res = await guardedPost(url, { allowPrivate: this.opts.allowPrivate }, signal, body, headers);
    // The answer's body means nothing to us, and a receiver could stream one for ever: reading it kept each such
    // delivery draining at full speed until its timeout (found from outside: 20 of them took /healthz from 5 ms to
    // over a second). The connection (never reused: no agent) is closed as soon as the status is known.
    res.destroy();
    return res.statusCode ?? 0;
  }
}
