import { signatureHeader } from '../../security/standard-webhooks-signature.js';
import { VERSION } from '../../version.js';
import type { TargetGuard } from './target-guard.js';
import { WebhookHttp, WebhookTimeoutError } from './webhook-http.js';
import type { WebhookMetrics } from './webhook-metrics.js';
import type { WebhookStore } from './webhook-store.js';

/** What an attempt needs of its endpoint. */
export interface EndpointTarget {
  url: string;
  secret_cipher: string;
  previous_secret_cipher: string | null;
  previous_valid_until: unknown;
}

/** An event as a receiver gets it. */
export interface OutgoingEvent {
  id: string;
  type: string;
  createdAt: number;
  accountId: string;
  payload: unknown;
}

export interface AttemptResult {
  /** null: a 2xx. */
  error: string | null;
  statusCode: number | null;
  latencyMs: number;
}

const MAX_ERROR_CHARS = 500;

/** The body of one event: the documented single-event format. */
export function eventBody(e: OutgoingEvent): string {
  return JSON.stringify({ id: e.id, type: e.type, createdAt: new Date(e.createdAt).toISOString(), accountId: e.accountId, data: e.payload });
}

/**
 * One signed POST of one event (or, for an endpoint taking batches, of an array of events under one webhook-id) to
 * an endpoint, through the guarded client: the attempt both delivery paths (the event stream and the retry set)
 * make. Never throws: a refused target, a network error, a timeout or a non-2xx is an error string.
 */
export class WebhookPoster {
  private readonly http: WebhookHttp;

  constructor(
    private readonly guard: TargetGuard,
    private readonly store: WebhookStore,
    private readonly metrics: WebhookMetrics,
    private readonly timeoutMs: number,
  ) {
    this.http = new WebhookHttp(guard);
  }

  async post(e: EndpointTarget, webhookId: string, body: string): Promise<AttemptResult> {
    const started = performance.now();
    let statusCode: number | null = null;
    let error: string | null = null;
    try {
      const target = await this.guard.check(e.url);
      if (!target.ok) error = `target refused: ${target.reason}`;
      else {
        const timestamp = Math.floor(Date.now() / 1000);
        try {
          statusCode = await this.http.post(
            target.url,
            {
              'content-type': 'application/json',
              'user-agent': `Ferry-Webhooks/${VERSION}`,
              'webhook-id': webhookId,
              'webhook-timestamp': String(timestamp),
              'webhook-signature': signatureHeader(this.store.signingSecrets(e), webhookId, timestamp, body),
            },
            body,
            this.timeoutMs,
          );
          if (statusCode < 200 || statusCode >= 300) error = `HTTP ${statusCode}`;
        } catch (err) {
          const x = err as Error;
          error = x instanceof WebhookTimeoutError ? x.message : `request failed: ${x.message}`;
        }
      }
    } catch (err) {
      // Signing (a secret that no longer decrypts) or the guard itself: a failed attempt like any other.
      error = `attempt failed: ${(err as Error).message}`;
    }
    const latencyMs = Math.round(performance.now() - started);
    this.metrics.latency.observe(latencyMs / 1000);
    return { error: error === null ? null : error.slice(0, MAX_ERROR_CHARS), statusCode, latencyMs };
  }

  close(): void {
    this.http.close();
  }
}
