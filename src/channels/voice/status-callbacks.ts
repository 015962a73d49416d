import { createHmac } from 'node:crypto';
import type { OutboundJob, ProviderAdapter, SendResult } from '../../outbound/types.js';
import { GuardedHttpError, type GuardedHttp } from '../../security/guarded-http.js';
import { signatureHeader } from '../../security/standard-webhooks-signature.js';
import type { TargetGuard } from '../../security/target-guard.js';
import type { StatusCallbackPayload } from './call-recorder.js';

/** The account's voice callback signing secret: derived, so never stored; the same on every instance. */
export function callbackSigningSecret(key: Buffer, accountId: string): string {
  return 'whsec_' + createHmac('sha256', key).update(`voice-callback:${accountId}`).digest().subarray(0, 24).toString('base64');
}

const MAX_ANSWER_BYTES = 16 * 1024;

/**
 * Status callbacks as an outbound provider: a POST of the call's view to the URL the call gave, signed like webhooks
 * (webhook-id is the callback's id, stable across retries, so a receiver can drop duplicates), through the guarded
 * client. 2xx is delivered; 408, 429 and 5xx and network failures are retried by the pipeline's schedule; other 4xx
 * fail (the receiver refused it). Errors are classified in this one place.
 */
export class StatusCallbackAdapter implements ProviderAdapter<StatusCallbackPayload> {
  readonly name = 'voice-callback';
  private readonly http: GuardedHttp;

  constructor(private readonly o: { guard: TargetGuard; signingKey: Buffer; timeoutMs: number; clock?: () => number }) {
    this.http = o.guard.client({ agent: { keepAlive: true, timeout: 4000, maxSockets: 64 } });
  }

  endpointOf(job: OutboundJob<StatusCallbackPayload>): string {
    try {
      return new URL(job.payload.url).host;
    } catch {
      return 'invalid';
    }
  }

  async send(job: OutboundJob<StatusCallbackPayload>, signal: AbortSignal): Promise<SendResult> {
    const { url, callbackId, body } = job.payload;
    const timestamp = Math.floor((this.o.clock ?? Date.now)() / 1000);
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'Ferry-Voice',
      'webhook-id': callbackId,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signatureHeader([callbackSigningSecret(this.o.signingKey, job.accountId)], callbackId, timestamp, body),
    };
    if (signal.aborted) return { kind: 'retry', code: 'TIMEOUT', message: 'aborted before sending' };
    try {
      const res = await this.http.request(url, { method: 'POST', headers, body, timeoutMs: this.o.timeoutMs, maxBytes: MAX_ANSWER_BYTES });
      if (res.status >= 200 && res.status < 300) return { kind: 'sent', providerId: callbackId };
      if (res.status === 408 || res.status === 429 || res.status >= 500) {
        const retryAfter = Number(res.headers['retry-after']);
        return { kind: 'retry', code: 'CALLBACK_HTTP_STATUS', providerCode: String(res.status), message: `the callback URL answered ${res.status}`, ...(retryAfter > 0 ? { retryAfterMs: retryAfter * 1000 } : {}) };
      }
      return { kind: 'fail', code: 'CALLBACK_REFUSED', providerCode: String(res.status), message: `the callback URL answered ${res.status}` };
    } catch (err) {
      if (!(err instanceof GuardedHttpError)) throw err;
      if (err.kind === 'TARGET_BLOCKED' || err.kind === 'INVALID_URL') return { kind: 'fail', code: 'CALLBACK_URL_REFUSED', message: err.message };
      return { kind: 'retry', code: `CALLBACK_${err.kind}`, message: err.message };
    }
  }

  close(): void {
    this.http.close();
  }
}
