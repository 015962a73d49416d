import { GuardedHttpError, type GuardedHttp } from '../../security/guarded-http.js';
import type { TargetGuard } from './target-guard.js';

/** Bytes of a receiver's answer body read at most (it is not used; a longer one ends the connection). */
const MAX_ANSWER_BYTES = 64 * 1024;

export class WebhookTimeoutError extends Error {
  override readonly name = 'TimeoutError';
}

/**
 * POSTs for the webhook sender through the guarded client (every address checked, the connection to a checked one),
 * with keep-alive agents: one connection per request in flight to an origin, reused between deliveries (the sender
 * caps requests per endpoint, so the agents do not). node:http underneath, not fetch(): far less CPU per request on the
 * sender's hot path. Redirects are not followed (a 3xx is an answer like any other).
 */
export class WebhookHttp {
  // An idle connection is closed after 4 s, before the 5 s keep-alive timeout common on servers (Node's own default),
  // so a delivery rarely lands on a connection the receiver is closing.
  private readonly http: GuardedHttp;

  constructor(guard: TargetGuard) {
    this.http = guard.client({ agent: { keepAlive: true, timeout: 4000, scheduling: 'lifo' } });
  }

  /**
   * Resolves with the status once the answer is in (a body past 64 KiB or cut short still carried its status); rejects
   * on a refused target or a network error, and with WebhookTimeoutError after timeoutMs.
   */
  async post(url: URL, headers: Record<string, string>, body: string, timeoutMs: number): Promise<number> {
    try {
      const res = await this.http.request(url, { method: 'POST', headers, body, timeoutMs, maxBytes: MAX_ANSWER_BYTES, keepBytes: 0, overflow: 'cut' });
      return res.status;
    } catch (err) {
      if (err instanceof GuardedHttpError && err.kind === 'TIMEOUT') throw new WebhookTimeoutError(err.message);
      throw err;
    }
  }

  /** Closes idle connections (at shutdown). */
  close(): void {
    this.http.close();
  }
}
