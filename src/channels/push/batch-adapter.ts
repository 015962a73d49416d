import { setMaxListeners } from 'node:events';
import type { OutboundJob, ProviderAdapter, SendResult } from '../../outbound/index.js';
import type { BatchPayload, PushService } from './batch-job.js';
import { type BatchOutcomes, type DeviceOutcome, retryAfterOf } from './batch-outcomes.js';
import type { ProviderClients } from './provider-clients.js';
import { INVALIDATING_CODES, PUSH_CREDENTIALS_REJECTED, type PushMessage, type PushProviderClient } from './providers/types.js';

/**
 * The outbound adapter of one service (`push-fcm`, `push-apns`). Its job is a batch of devices: it sends each through
 * the app's provider client, a bounded number at a time, and leaves each device's outcome for the product's onChange,
 * which records them in the transaction that ends the job. The batch as a whole is retried by the pipeline only when
 * no device got through (the service is down or throttling): then the breaker and backoff see it as one answer.
 */
export class PushBatchAdapter implements ProviderAdapter<BatchPayload> {
  readonly name: string;

  constructor(
    readonly service: PushService,
    private readonly o: {
      clients: ProviderClients;
      outcomes: BatchOutcomes;
      concurrency: number;
      /** How long the batches of an app whose credentials were refused wait before they look again. */
      pausedRecheckMs: number;
      clock?: () => number;
    },
  ) {
    this.name = service === 'fcm' ? 'push-fcm' : 'push-apns';
  }

  /** What fails together: an app's credentials and endpoint of this service. */
  endpointOf(job: OutboundJob<BatchPayload>): string {
    const p = job.payload;
    return p.environment ? `${p.appId}/${p.service}/${p.environment}` : `${p.appId}/${p.service}`;
  }

  async send(job: OutboundJob<BatchPayload>, signal: AbortSignal): Promise<SendResult> {
    const p = job.payload;
    const found = await this.o.clients.lookup(job.accountId, p.appId, p.service, p.environment);
    if (found.kind === 'none') return { kind: 'fail', code: found.code, message: found.message };
    if (found.kind === 'paused') {
      // Not a failure of the service: the app waits for new credentials (PATCH /v1/push/apps/:id), then goes on.
      return { kind: 'retry', code: PUSH_CREDENTIALS_REJECTED, message: found.reason, retryAfterMs: this.o.pausedRecheckMs, providerHealthy: true };
    }
    // Every request in flight listens to the batch's signal.
    setMaxListeners(this.o.concurrency + 10, signal);
    const outcomes = await this.sendAll(found.client, p, signal);
    if (signal.aborted) return { kind: 'retry', code: 'PROVIDER_TIMEOUT', message: 'the batch did not end within the send timeout' };
    let credentialsRefused: { code: string; message: string } | null = null;
    let again = 0;
    let retryAfterMs: number | null = null;
    let firstAgain: Extract<DeviceOutcome, { kind: 'again' }> | null = null;
    let throttled = false;
    for (const r of outcomes.results) {
      if (r.kind !== 'again') continue;
      again++;
      firstAgain ??= r;
      if (r.retryAfterMs !== null) retryAfterMs = Math.max(retryAfterMs ?? 0, r.retryAfterMs);
      if (r.code === 'PROVIDER_THROTTLED') throttled = true;
    }
    if (outcomes.credentials) credentialsRefused = outcomes.credentials;
    // Nothing got through and the credentials are not in question: the service is down or throttling, so the whole
    // batch waits as one job (backoff, Retry-After, the breaker), and no device's outcome is recorded yet.
    if (again === outcomes.results.length && !credentialsRefused && firstAgain) {
      return {
        kind: 'retry',
        code: firstAgain.code,
        providerCode: firstAgain.providerCode ?? undefined,
        message: firstAgain.message,
        retryAfterMs: retryAfterMs ?? undefined,
        throttled,
      };
    }
    this.o.outcomes.put(job.id, { outcomes: outcomes.results, credentialsRefused, retryAfterMs, at: (this.o.clock ?? Date.now)() });
    const first = outcomes.results[0];
    return { kind: 'sent', providerId: p.devices.length === 1 && first?.kind === 'sent' ? first.providerId : `batch of ${p.devices.length}` };
  }

  /** Sends every device of the batch, `concurrency` at a time; stops sending once the credentials are refused. */
  private async sendAll(client: PushProviderClient, p: BatchPayload, signal: AbortSignal): Promise<{ results: DeviceOutcome[]; credentials: { code: string; message: string } | null }> {
    const results: DeviceOutcome[] = new Array(p.devices.length);
    let credentials: { code: string; message: string } | null = null;
    let next = 0;
    const lane = async (): Promise<void> => {
      while (next < p.devices.length) {
        const i = next++;
        const [deviceId, token, platform] = p.devices[i];
        if (credentials || signal.aborted) {
          results[i] = { kind: 'again', deviceId, code: credentials ? PUSH_CREDENTIALS_REJECTED : 'PROVIDER_TIMEOUT', providerCode: null, message: credentials?.message ?? 'not sent before the timeout', retryAfterMs: null };
          continue;
        }
        const message: PushMessage = { ...p.message, token, platform };
        let r: SendResult;
        try {
          r = await client.send(message, signal);
        } catch (err) {
          r = { kind: 'retry', code: 'PROVIDER_ERROR', message: (err as Error)?.message ?? String(err) };
        }
        results[i] = outcomeOf(deviceId, r);
        if (r.kind === 'fail' && r.code === PUSH_CREDENTIALS_REJECTED) {
          credentials ??= { code: r.code, message: r.message };
          results[i] = { kind: 'again', deviceId, code: r.code, providerCode: r.providerCode ?? null, message: r.message, retryAfterMs: null };
        }
      }
    };
    const lanes = Math.max(1, Math.min(this.o.concurrency, p.devices.length));
    await Promise.all(Array.from({ length: lanes }, lane));
    return { results, credentials };
  }
}

function outcomeOf(deviceId: string, r: SendResult): DeviceOutcome {
  if (r.kind === 'sent') return { kind: 'sent', deviceId, providerId: r.providerId };
  if (r.kind === 'fail') {
    const detail = { deviceId, code: r.code, providerCode: r.providerCode ?? null, message: r.message };
    return INVALIDATING_CODES.has(r.code) ? { kind: 'invalidated', ...detail } : { kind: 'failed', ...detail };
  }
  return { kind: 'again', deviceId, code: r.code, providerCode: r.providerCode ?? null, message: r.message, retryAfterMs: retryAfterOf(r) };
}
