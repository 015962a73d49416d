import type { Logger } from 'pino';
import type { RetryPolicy } from '../../delivery/retry-policy.js';
import type { OutboundJob, OutboundPipeline, StateChange } from '../../outbound/index.js';
import type { ModuleEvent, ModuleEvents } from '../../platform/event-sink.js';
import type { Queryable, Transaction } from '../../store/types.js';
import type { BatchDevice, BatchPayload } from './batch-job.js';
import type { BatchOutcomes, BatchResult, DeviceOutcome } from './batch-outcomes.js';

/** Columns of push_sends a completion reads. */
interface SendCounts {
  id: string;
  account_id: string;
  target_kind: string;
  target: string;
  status: string;
  targeted: number;
  sent: number;
  failed: number;
  invalidated: number;
  pending: number;
}

/**
 * Records what batches came to, in the pipeline's transaction that ends their jobs (its onChange): the send's
 * counters, a row for each device that failed or was invalidated (and for device and user sends, each that got its
 * push), devices marked invalid with their push.device.invalidated events, the app paused when its credentials were
 * refused, the devices to try again as a new batch, and, when the send's last batch ended, its push.sent or
 * push.failed event.
 */
export class SendRecorder {
  constructor(
    private readonly o: {
      outcomes: BatchOutcomes;
      events: ModuleEvents;
      pipeline: () => OutboundPipeline;
      /** Between rounds of a batch's devices that must be tried again. */
      retry: RetryPolicy;
      /** Rounds a device gets before its last retryable answer is final. */
      maxRounds: number;
      log: Logger;
      /** After a transaction that paused an app (its credentials refused), once it may have committed. */
      onPaused?: () => void;
      clock?: () => number;
    },
  ) {}

  readonly onChange = async (q: Transaction, changes: readonly StateChange<BatchPayload>[]): Promise<void> => {
    let emitted = 0;
    for (const c of changes) {
      if (c.to !== 'sent' && c.to !== 'failed') continue;
      const result = this.o.outcomes.take(c.job.id) ?? wholeBatch(c.job, c.to);
      emitted += await this.record(q, c.job, result);
    }
    if (emitted) {
      // After the pipeline's commit (a wake before it only makes delivery look early; its poll finds them anyway).
      setTimeout(() => this.o.events.wake(), 20).unref();
    }
  };

  private async record(q: Transaction, job: OutboundJob<BatchPayload>, result: BatchResult): Promise<number> {
    const p = job.payload;
    const now = (this.o.clock ?? Date.now)();
    const rows: { device: string; status: string; providerId: string | null; error: string | null; providerError: string | null; message: string | null }[] = [];
    const invalid: Extract<DeviceOutcome, { kind: 'invalidated' }>[] = [];
    const again: BatchDevice[] = [];
    let sent = 0;
    let failed = 0;
    let lastAgain: Extract<DeviceOutcome, { kind: 'again' }> | null = null;
    const byId = new Map(p.devices.map((d) => [d[0], d] as const));
    const nextRound = p.round < this.o.maxRounds && now < job.deadlineAt ? this.o.retry.after(p.round, result.retryAfterMs ?? undefined) : ({ final: true } as const);
    for (const r of result.outcomes) {
      if (!r) continue;
      if (r.kind === 'sent') {
        sent++;
        if (p.keepSent) rows.push({ device: r.deviceId, status: 'sent', providerId: r.providerId, error: null, providerError: null, message: null });
      } else if (r.kind === 'invalidated') {
        invalid.push(r);
        rows.push({ device: r.deviceId, status: 'invalidated', providerId: null, error: r.code, providerError: r.providerCode, message: r.message });
      } else if (r.kind === 'again' && !nextRound.final) {
        const d = byId.get(r.deviceId);
        if (d) again.push(d);
        lastAgain = r;
      } else {
        failed++;
        rows.push({ device: r.deviceId, status: 'failed', providerId: null, error: r.code, providerError: r.providerCode, message: r.message });
      }
    }
    if (rows.length) await insertOutcomes(q, p.pushId, rows, now);

    const events: ModuleEvent[] = [];
    if (invalid.length) {
      const { rows: gone } = await q.query<{ id: string; app_id: string; user_id: string | null }>(
        `UPDATE push_devices SET status = 'invalid', invalid_reason = r.reason, invalidated_at = to_timestamp($3::float8 / 1000.0), updated_at = to_timestamp($3::float8 / 1000.0)
         FROM unnest($1::text[], $2::text[]) AS r(id, reason)
         WHERE push_devices.id = r.id AND push_devices.status = 'active'
         RETURNING push_devices.id, push_devices.app_id, push_devices.user_id`,
        [invalid.map((r) => r.deviceId), invalid.map((r) => r.code), now],
      );
      const reasonOf = new Map(invalid.map((r) => [r.deviceId, r] as const));
      for (const d of gone) {
        const r = reasonOf.get(d.id)!;
        events.push({
          accountId: job.accountId,
          type: 'push.device.invalidated',
          messageKey: d.id,
          data: { deviceId: d.id, appId: d.app_id, userId: d.user_id, reason: r.code, providerError: r.providerCode, pushId: p.pushId },
        });
      }
    }
    if (result.credentialsRefused) {
      const { rowCount } = await q.query(
        `UPDATE push_apps SET paused_service = $2, paused_reason = $3, paused_at = to_timestamp($4::float8 / 1000.0) WHERE id = $1 AND paused_service IS NULL`,
        [p.appId, p.service, `${result.credentialsRefused.code}: ${result.credentialsRefused.message}`, now],
      );
      if (rowCount && this.o.onPaused) setTimeout(this.o.onPaused, 50).unref();
      if (rowCount) this.o.log.warn({ appId: p.appId, service: p.service, reason: result.credentialsRefused.message }, 'push: the service refused the app\'s credentials; its sends wait until they change');
    }
    if (again.length && !nextRound.final) {
      await this.o.pipeline().enqueue(q, [
        {
          product: 'push',
          provider: job.provider,
          accountId: job.accountId,
          messageId: p.pushId,
          payload: { ...p, devices: again, round: p.round + 1 },
          notBefore: now + nextRound.delayMs,
          deadlineAt: job.deadlineAt,
        },
      ]);
      this.o.log.debug({ pushId: p.pushId, devices: again.length, round: p.round + 1, code: lastAgain?.code }, 'push: devices to try again');
    }
    const ended = sent + failed + invalid.length;
    const { rows: after } = await q.query<SendCounts>(
      `UPDATE push_sends SET sent = sent + $2, failed = failed + $3, invalidated = invalidated + $4, pending = pending - $5 WHERE id = $1
       RETURNING id, account_id, target_kind, target, status, targeted, sent, failed, invalidated, pending`,
      [p.pushId, sent, failed, invalid.length, ended],
    );
    const s = after[0];
    if (s && s.status === 'sending' && s.pending <= 0) {
      const done = await completeSend(q, s.id, now);
      if (done) events.push(await completionEvent(q, done));
    }
    if (events.length) await this.o.events.emit(q, events);
    return events.length;
  }
}

/** A batch without per-device outcomes: a failed job (its deadline, no credentials, the app deleted) fails them all. */
function wholeBatch(job: OutboundJob<BatchPayload>, to: string): BatchResult {
  const at = Date.now();
  if (to === 'sent') {
    return { outcomes: job.payload.devices.map((d) => ({ kind: 'sent', deviceId: d[0], providerId: job.providerId ?? '' })), credentialsRefused: null, retryAfterMs: null, at };
  }
  const code = job.ferryError ?? 'PUSH_FAILED';
  return {
    outcomes: job.payload.devices.map((d) => ({ kind: 'failed', deviceId: d[0], code, providerCode: job.providerError, message: job.errorMessage ?? code })),
    credentialsRefused: null,
    retryAfterMs: null,
    at,
  };
}

async function insertOutcomes(
  q: Queryable,
  pushId: string,
  rows: readonly { device: string; status: string; providerId: string | null; error: string | null; providerError: string | null; message: string | null }[],
  now: number,
): Promise<void> {
  // A device's last outcome wins: a batch sent again after a crash may answer differently the second time.
  await q.query(
    `INSERT INTO push_send_outcomes (send_id, device_id, status, provider_id, error, provider_error, message, at)
     SELECT $1, r.device, r.status, r.provider_id, r.error, r.provider_error, r.message, to_timestamp($8::float8 / 1000.0)
     FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[]) AS r(device, status, provider_id, error, provider_error, message)
     ON CONFLICT (send_id, device_id) DO UPDATE SET status = EXCLUDED.status, provider_id = EXCLUDED.provider_id, error = EXCLUDED.error,
       provider_error = EXCLUDED.provider_error, message = EXCLUDED.message, at = EXCLUDED.at`,
    [pushId, rows.map((r) => r.device), rows.map((r) => r.status), rows.map((r) => r.providerId), rows.map((r) => r.error), rows.map((r) => r.providerError), rows.map((r) => r.message), now],
  );
}

/** Ends a send whose devices all ended: null when another transaction ended it first. */
export async function completeSend(q: Queryable, pushId: string, now: number): Promise<SendCounts | null> {
  const { rows } = await q.query<SendCounts>(
    `UPDATE push_sends SET status = 'completed', completed_at = to_timestamp($2::float8 / 1000.0) WHERE id = $1 AND status <> 'completed'
     RETURNING id, account_id, target_kind, target, status, targeted, sent, failed, invalidated, pending`,
    [pushId, now],
  );
  return rows[0] ?? null;
}

/** push.sent when any device got it, else push.failed; a single device's send carries its outcome. */
export async function completionEvent(q: Queryable, s: SendCounts): Promise<ModuleEvent> {
  const data: Record<string, unknown> = {
    pushId: s.id,
    target: { kind: s.target_kind, value: s.target },
    targeted: s.targeted,
    sent: s.sent,
    failed: s.failed,
    invalidated: s.invalidated,
  };
  if (s.target_kind === 'device') {
    const { rows } = await q.query<{ status: string; provider_id: string | null; error: string | null; provider_error: string | null; message: string | null }>(
      `SELECT status, provider_id, error, provider_error, message FROM push_send_outcomes WHERE send_id = $1 LIMIT 1`,
      [s.id],
    );
    const o = rows[0];
    if (o?.provider_id) data.providerId = o.provider_id;
    if (o?.error) data.error = { code: o.error, providerCode: o.provider_error, message: o.message };
  }
  return { accountId: s.account_id, type: s.sent > 0 ? 'push.sent' : 'push.failed', messageKey: s.id, data };
}
