import http from 'node:http';
import { parseRetryAfter } from '../../src/delivery/retry-policy.js';
import { ErrorTable } from '../../src/outbound/error-table.js';
import type { OutboundJob, ProviderAdapter, SendResult } from '../../src/outbound/types.js';

export interface TestPayload {
  to: string;
  body: string;
}

/** The fail-on-demand provider's ONE error table. */
export const TEST_ERRORS = new ErrorTable('test-http', {
  rate_limited: { ferryCode: 'PROVIDER_THROTTLED', action: 'backoff' },
  server_error: { ferryCode: 'PROVIDER_UNAVAILABLE', action: 'retry' },
  E131026: { ferryCode: 'RECIPIENT_UNREACHABLE', action: 'fail' },
  E_BAD_TEMPLATE: { ferryCode: 'TEMPLATE_REJECTED', action: 'fail' },
  E_PAIR_LIMIT: { ferryCode: 'PAIR_RATE_LIMITED', action: 'later' },
});

/**
 * A tiny real adapter over HTTP for the contract test: POST <url>/messages {to, account, body}; a 200 answer's `id`
 * is the provider's id, every other answer goes through the error table (with Retry-After). A network error is
 * thrown (the pipeline classifies it as retryable PROVIDER_ERROR).
 */
export class HttpTestAdapter implements ProviderAdapter<TestPayload> {
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  private readonly target: URL;

  constructor(
    readonly name: string,
    baseUrl: string,
    private readonly now: () => number = Date.now,
  ) {
    this.target = new URL('/messages', baseUrl);
  }

  endpointOf(): string {
    return this.target.origin;
  }

  send(job: OutboundJob<TestPayload>, signal: AbortSignal): Promise<SendResult> {
    const body = JSON.stringify({ to: job.payload.to, account: job.accountId, body: job.payload.body });
    return new Promise<SendResult>((resolve, reject) => {
      const req = http.request(this.target, {
        method: 'POST',
        agent: this.agent,
        signal,
        headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) },
      });
      req.once('error', reject);
      req.once('response', (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.once('error', reject);
        res.once('end', () => {
          let json: { id?: string; error?: { code?: string; message?: string } } = {};
          try {
            json = JSON.parse(text) as typeof json;
          } catch {
            // not JSON: classified by status
          }
          const status = res.statusCode ?? 0;
          if (status === 200 && json.id) return resolve({ kind: 'sent', providerId: json.id });
          resolve(
            TEST_ERRORS.classify({
              providerCode: json.error?.code,
              message: json.error?.message,
              httpStatus: status,
              retryAfterMs: parseRetryAfter(res.headers['retry-after'], this.now()),
            }),
          );
        });
      });
      req.end(body);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}
