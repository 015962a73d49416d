import type { AccountPolicies } from '../../accounts/account-policies.js';
import { LedgerBusyError } from '../../ledger/ledger-busy-error.js';
import type { Ledger } from '../../ledger/ledger.js';
import type { LedgerWriter } from '../../ledger/ledger-writer.js';
import type { MessageRecord, NewMessage } from '../../ledger/types.js';
import type { Router } from '../../routing/router.js';
import { alphabetOf } from '../../smpp/text/encoding.js';
import { countSegments } from '../../smpp/text/segments.js';
import type { Lane, Queue, Throttle } from '../../store/types.js';
import { newId } from '../../util/ids.js';
import type { QueueFeeder } from '../../dispatch/queue-feeder.js';
import { normalizeNumber, normalizeSender } from './phone.js';
import { SmsError, type AcceptedSms, type DispatchPayload, type SmsIngress, type SmsSubmission } from './types.js';

export interface SmsServiceOptions {
  writer: LedgerWriter;
  ledger: Ledger;
  queue: Queue<DispatchPayload>;
  feeder: QueueFeeder<DispatchPayload>;
  router: Router;
  throttle: Throttle;
  policies: AccountPolicies;
  /** Submits per second for accounts without their own limit; 0 = unlimited. */
  defaultAccountTps: number;
  /** Most text segments one message may need (default 10). */
  maxSegments?: number;
  /** Queue attempts before a message fails for good. */
  maxAttempts: number;
  /** True while Ferry is saturated (windows full and queue deep): new work is refused with BUSY. */
  isBusy?: () => boolean;
  /** Count of accepted / refused submissions (metrics). */
  onOutcome?: (ingress: SmsSubmission['ingress'], outcome: string) => void;
  clock?: () => number;
}

/** Octets of binary user data: ten parts of 134 behind a concatenation UDH, split by the upstream pool. */
const MAX_BINARY_OCTETS = 1340;

/**
 * The SMS product's rules, shared by every ingress: sender and recipient rules, encoding and segments, account
 * limits, back-pressure, then the durable accept (ledger row committed) and the hand-over to the queue.
 */
export class SmsService implements SmsIngress {
  private readonly o: SmsServiceOptions;
  private readonly clock: () => number;
  private readonly maxSegments: number;

  constructor(options: SmsServiceOptions) {
    this.o = options;
    this.clock = options.clock ?? Date.now;
    this.maxSegments = options.maxSegments ?? 10;
  }

  async submit(sub: SmsSubmission): Promise<AcceptedSms> {
    try {
      const accepted = await this.accept(sub);
      this.o.onOutcome?.(sub.ingress, 'accepted');
      return accepted;
    } catch (err) {
      this.o.onOutcome?.(sub.ingress, err instanceof SmsError ? err.code : 'STORAGE_UNAVAILABLE');
      throw err;
    }
  }

  async cancel(messageId: string, accountId: string): Promise<boolean> {
    const cancelled = await this.o.ledger.cancel(messageId, accountId);
    // The queue item may be gone already (being sent): the dispatcher skips cancelled rows.
    if (cancelled) await this.o.queue.cancel(messageId).catch(() => false);
    return cancelled;
  }

  find(messageId: string, accountId: string): Promise<MessageRecord | null> {
    return this.o.ledger.get(messageId, accountId);
  }

  private async accept(sub: SmsSubmission): Promise<AcceptedSms> {
    const policy = await this.o.policies.get(sub.accountId).catch((err: unknown) => {
      throw new SmsError('STORAGE_UNAVAILABLE', `account lookup failed: ${(err as Error).message}`);
    });
    if (!policy) throw new SmsError('ACCOUNT_SUSPENDED', 'unknown account');
    if (policy.status !== 'active') throw new SmsError('ACCOUNT_SUSPENDED', 'account is suspended');

    const sender = normalizeSender(sub.source, sub.sourceTon, sub.sourceNpi);
    if (!sender) throw new SmsError('INVALID_SOURCE', 'sender must be up to 11 letters/digits or up to 15 digits');
    const destination = normalizeNumber(sub.destination, { international: sub.destTon === 1, defaultCountry: policy.defaultCountry });
    if (!destination) throw new SmsError('INVALID_DESTINATION', `not a valid phone number: ${sub.destination}`);

    let segments: number;
    let encoding: string;
    if (sub.text !== undefined) {
      if (sub.text.length === 0) throw new SmsError('EMPTY_MESSAGE', 'message is empty');
      const count = countSegments(sub.text);
      if (count.segments > this.maxSegments) {
        throw new SmsError('MESSAGE_TOO_LONG', `message needs ${count.segments} segments; at most ${this.maxSegments}`);
      }
      segments = count.segments;
      encoding = count.encoding;
    } else if (sub.bytes) {
      if (sub.bytes.length === 0) throw new SmsError('EMPTY_MESSAGE', 'message is empty');
      if (!sub.concat && sub.bytes.length > MAX_BINARY_OCTETS) {
        throw new SmsError('MESSAGE_TOO_LONG', `binary message of ${sub.bytes.length} octets; at most ${MAX_BINARY_OCTETS}`);
      }
      if (sub.concat && sub.bytes.length > 254) throw new SmsError('MESSAGE_TOO_LONG', 'a message part carries at most 254 octets');
      segments = sub.concat || sub.bytes.length <= 140 ? 1 : Math.ceil(sub.bytes.length / 134);
      encoding = alphabetOf(sub.dataCoding ?? 0);
    } else {
      throw new SmsError('EMPTY_MESSAGE', 'message is empty');
    }

    const now = this.clock();
    const scheduledAt = sub.scheduledAt != null && sub.scheduledAt > now ? sub.scheduledAt : null;
    const expiresAt = sub.expiresAt ?? null;
    if (expiresAt !== null && expiresAt <= now) throw new SmsError('INVALID_VALIDITY', 'validity period has already passed');
    if (expiresAt !== null && scheduledAt !== null && expiresAt <= scheduledAt) {
      throw new SmsError('INVALID_VALIDITY', 'validity period ends before the scheduled delivery time');
    }

    const priority = sub.priority ?? 0;
    if (!this.o.router.candidates({ destination, accountId: sub.accountId, source: sender.source, priority })) {
      throw new SmsError('NO_ROUTE', `no routing rule matches ${destination}`);
    }
    if (this.o.isBusy?.()) throw new SmsError('BUSY', 'Ferry is at capacity; retry shortly', 1000);
    const tps = policy.maxTps ?? this.o.defaultAccountTps;
    if (tps > 0) {
      const take = await this.o.throttle.take(`tps:${sub.accountId}`, tps, tps).catch((err: unknown) => {
        throw new SmsError('STORAGE_UNAVAILABLE', `throttle unavailable: ${(err as Error).message}`);
      });
      if (!take.allowed) throw new SmsError('THROTTLED', `more than ${tps} messages per second`, take.retryAfterMs);
    }

    const id = newId('msg_', now);
    const row: NewMessage = {
      id,
      accountId: sub.accountId,
      ingress: sub.ingress,
      batchId: sub.batchId ?? null,
      reference: sub.reference ?? null,
      source: sender.source,
      sourceTon: sender.ton,
      sourceNpi: sender.npi,
      destination,
      body: sub.text ?? sub.displayText ?? null,
      bodyBytes: sub.text === undefined ? sub.bytes : null,
      dataCoding: sub.text === undefined ? (sub.dataCoding ?? 0) : null,
      esmClass: sub.esmClass ?? 0,
      udhRef: sub.concat?.reference ?? null,
      udhTotal: sub.concat?.total ?? null,
      udhSeq: sub.concat?.seq ?? null,
      segments,
      encoding,
      priority,
      registeredDelivery: sub.registeredDelivery ?? 0,
      scheduledAt,
      expiresAt,
      currency: policy.currency,
      customerSystemId: sub.customerSystemId ?? null,
      resendOf: sub.resendOf ?? null,
    };
    try {
      await this.o.writer.accept(row);
    } catch (err) {
      if (err instanceof LedgerBusyError) throw new SmsError('BUSY', 'ledger writer is backed up; retry shortly', 200);
      throw new SmsError('STORAGE_UNAVAILABLE', `message not accepted: ${(err as Error).message}`);
    }
    const lane: Lane = sub.lane ?? (priority >= 1 ? 'priority' : 'bulk');
    this.o.feeder.push({ id, lane, payload: { id }, runAt: scheduledAt ?? now, maxAttempts: this.o.maxAttempts });
    return { messageId: id, status: scheduledAt !== null ? 'scheduled' : 'queued', destination, segments, encoding };
  }
}

/** The lane a ledger row travels in (the reconciler pushes rows again with it). */
export function laneOf(rec: Pick<MessageRecord, 'priority'>): Lane {
  return rec.priority >= 1 ? 'priority' : 'bulk';
}
