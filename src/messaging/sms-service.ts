import type { AccountPolicies, AccountPolicy } from '../accounts/account-policies.js';
import type { Billing } from '../billing/billing.js';
import type { PriceBook } from '../billing/price-book.js';
import type { QueueFeeder } from '../dispatch/queue-feeder.js';
import { LedgerBusyError } from '../ledger/ledger-busy-error.js';
import type { Ledger } from '../ledger/ledger.js';
import type { LedgerWriter } from '../ledger/ledger-writer.js';
import type { MessageRecord, NewMessage } from '../ledger/types.js';
import type { Router } from '../routing/router.js';
import { alphabetOf } from '../smpp/text/encoding.js';
import { countSegments } from '../smpp/text/segments.js';
import { isDataError } from '../store/sql/db.js';
import type { Lane, PushItem, Queue, Throttle } from '../store/types.js';
import { newId } from '../util/ids.js';
import { accepts, effectiveValidation, type NumberValidation } from '../numbers/number-validation.js';
import { readNumber } from '../numbers/phone.js';
import { normalizeSender, SENDER_RULE } from './sender.js';
import {
  SmsError,
  type AcceptedSms,
  type BulkItemResult,
  type BulkResult,
  type DispatchPayload,
  type SmsApi,
  type SmsSubmission,
} from './types.js';

/**
 * A storage failure as STORAGE_UNAVAILABLE (503: nothing was accepted, retry), except a data error: a value the
 * database refused is not an outage, and is passed on as it is (the HTTP layer answers it 400).
 */
function unavailable(err: unknown, what: string): unknown {
  return isDataError(err) ? err : new SmsError('STORAGE_UNAVAILABLE', `${what}: ${(err as Error).message}`);
}

export interface SmsServiceOptions {
  writer: LedgerWriter;
  ledger: Ledger;
  queue: Queue<DispatchPayload>;
  feeder: QueueFeeder<DispatchPayload>;
  router: Router;
  throttle: Throttle;
  policies: AccountPolicies;
  prices: PriceBook;
  billing: Billing;
  /** Encrypts texts marked `seal` (OTP codes) for the ledger. */
  sealer: { encrypt(plain: string): string; decrypt(sealed: string): string };
  /** Submits per second for accounts without their own limit; 0 = unlimited. */
  defaultAccountTps: number;
  /** Country for local numbers when the account has none. */
  defaultCountry?: string | null;
  /** Recipient check per ingress where neither the account nor the route rule sets one (default: SMPP possible, REST strict). */
  numberValidation?: { smpp: NumberValidation; rest: NumberValidation };
  /** Most text segments one message may need (default 10). */
  maxSegments?: number;
  /** Queue attempts before a message fails for good. */
  maxAttempts: number;
  /** True while Ferry is saturated (windows full and queue deep): new work is refused with BUSY. */
  isBusy?: () => boolean;
  clock?: () => number;
}

/** Octets of binary user data: ten parts of 134 behind a concatenation UDH, split by the upstream pool. */
const MAX_BINARY_OCTETS = 1340;
const RESENDABLE = new Set(['failed', 'undelivered', 'rejected', 'expired']);

/** A submission that passed every rule, priced, ready to be written. */
interface Prepared {
  row: NewMessage;
  lane: Lane;
  unitMicros: number;
}

/**
 * The SMS product's rules, shared by every ingress: sender and recipient rules, allow-lists, encoding and
 * segments, routing, price, account limits and back-pressure; then the debit, the durable accept (ledger row
 * committed) and the hand-over to the queue.
 */
export class SmsService implements SmsApi {
  private readonly o: SmsServiceOptions;
  private readonly clock: () => number;
  private readonly maxSegments: number;
  private readonly numberValidation: { smpp: NumberValidation; rest: NumberValidation };

  constructor(options: SmsServiceOptions) {
    this.o = options;
    this.clock = options.clock ?? Date.now;
    this.maxSegments = options.maxSegments ?? 10;
    this.numberValidation = options.numberValidation ?? { smpp: 'possible', rest: 'strict' };
  }

  submit(sub: SmsSubmission): Promise<AcceptedSms> {
    return this.acceptOne(sub);
  }

  async submitMany(subs: readonly SmsSubmission[], opts: { batchId?: string } = {}): Promise<BulkResult> {
    const batchId = opts.batchId ?? newId('bat_');
    const now = this.clock();
    const results: BulkItemResult[] = new Array(subs.length);
    const prepared: Prepared[] = [];
    const index: number[] = [];
    const policies = new Map<string, AccountPolicy>();
    for (const sub of subs) if (!policies.has(sub.accountId)) policies.set(sub.accountId, await this.policy(sub.accountId));
    let currency = policies.values().next().value?.currency ?? 'USD';
    for (let i = 0; i < subs.length; i++) {
      try {
        const p = this.prepare({ ...subs[i], batchId }, policies.get(subs[i].accountId)!, now);
        prepared.push(p);
        index.push(i);
        currency = p.row.currency;
      } catch (err) {
        if (!(err instanceof SmsError)) throw err;
        results[i] = { index: i, ok: false, code: err.code, message: err.message };
      }
    }
    const rejected = subs.length - prepared.length;
    if (prepared.length) {
      if (this.o.isBusy?.()) throw new SmsError('BUSY', 'Ferry is at capacity; retry shortly', 1000);
      await this.commit(prepared, batchId);
      for (let k = 0; k < prepared.length; k++) results[index[k]] = { index: index[k], ok: true, accepted: this.acceptedOf(prepared[k]) };
    }
    const costMicros = prepared.reduce((s, p) => s + (p.row.costMicros ?? 0), 0);
    return { batchId, results, accepted: prepared.length, rejected, costMicros, currency };
  }

  async resend(messageId: string, accountId: string, opts: { allowedRecipients?: readonly string[] | null; reference?: string | null } = {}): Promise<AcceptedSms> {
    const orig = await this.o.ledger.get(messageId, accountId).catch((err: unknown) => {
      throw unavailable(err, 'message lookup failed');
    });
    if (!orig) throw new SmsError('MESSAGE_NOT_FOUND', `no message ${messageId}`);
    if (!RESENDABLE.has(orig.status)) throw new SmsError('NOT_RESENDABLE', `message is ${orig.status}; only failed, undelivered, rejected or expired messages can be resent`);
    const sealedText = orig.bodySealed !== null ? this.o.sealer.decrypt(orig.bodySealed) : undefined;
    return this.submit({
      accountId,
      ingress: orig.ingress,
      source: orig.source,
      sourceTon: orig.sourceTon,
      sourceNpi: orig.sourceNpi,
      destination: orig.destination,
      destTon: 1,
      text: sealedText ?? (orig.bodyBytes === null ? (orig.body ?? '') : undefined),
      seal: sealedText !== undefined,
      bytes: orig.bodyBytes ?? undefined,
      dataCoding: orig.dataCoding ?? undefined,
      esmClass: orig.esmClass,
      concat: orig.udhRef !== null && orig.udhTotal !== null && orig.udhSeq !== null ? { reference: orig.udhRef, total: orig.udhTotal, seq: orig.udhSeq, via: 'udh' } : undefined,
      displayText: orig.body ?? undefined,
      priority: orig.priority,
      registeredDelivery: orig.registeredDelivery,
      reference: opts.reference ?? orig.reference,
      customerSystemId: orig.customerSystemId,
      resendOf: orig.id,
      allowedRecipients: opts.allowedRecipients,
    });
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

  private async policy(accountId: string): Promise<AccountPolicy> {
    const policy = await this.o.policies.get(accountId).catch((err: unknown) => {
      throw unavailable(err, 'account lookup failed');
    });
    if (!policy) throw new SmsError('ACCOUNT_SUSPENDED', 'unknown account');
    return policy;
  }

  private async acceptOne(sub: SmsSubmission): Promise<AcceptedSms> {
    const policy = await this.policy(sub.accountId);
    const now = this.clock();
    const p = this.prepare(sub, policy, now);
    if (this.o.isBusy?.()) throw new SmsError('BUSY', 'Ferry is at capacity; retry shortly', 1000);
    const tps = policy.maxTps ?? this.o.defaultAccountTps;
    if (tps > 0) {
      const take = await this.o.throttle.take(`tps:${sub.accountId}`, tps, tps).catch((err: unknown) => {
        throw unavailable(err, 'throttle unavailable');
      });
      if (!take.allowed) throw new SmsError('THROTTLED', `more than ${tps} messages per second`, take.retryAfterMs);
    }
    await this.commit([p], p.row.id);
    return this.acceptedOf(p);
  }

  /** Every rule that needs no I/O; throws SmsError. */
  private prepare(sub: SmsSubmission, policy: AccountPolicy, now: number): Prepared {
    if (policy.status !== 'active') throw new SmsError('ACCOUNT_SUSPENDED', 'account is suspended');
    const sender = normalizeSender(sub.source, sub.sourceTon, sub.sourceNpi);
    if (!sender) throw new SmsError('INVALID_SOURCE', `not a valid sender ID: ${SENDER_RULE}`);
    // Read as leniently as any policy allows; the route rule (which needs the digits) and the account then say how
    // well the number must have been read.
    const reading = readNumber(sub.destination, {
      international: sub.destTon === 1,
      defaultCountry: policy.defaultCountry ?? this.o.defaultCountry ?? null,
    });
    if (!reading) throw new SmsError('INVALID_DESTINATION', `not a phone number: ${sub.destination}`);
    const priority = sub.priority ?? 0;
    const route = this.o.router.candidates({ destination: reading.digits, accountId: sub.accountId, source: sender.source, priority });
    const validation = effectiveValidation(policy.numberValidation, route?.numberValidation ?? null, this.numberValidation[sub.ingress]);
    if (!accepts(validation, reading.grade)) {
      throw new SmsError('INVALID_DESTINATION', `not a ${validation === 'strict' ? 'valid' : 'possible'} phone number: ${sub.destination}`);
    }
    const destination = reading.digits;
    if (!allowed(destination, sub.allowedRecipients) || !allowed(destination, policy.allowedRecipients)) {
      throw new SmsError('RECIPIENT_NOT_ALLOWED', `${destination} is not on the allow-list`);
    }

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

    const scheduledAt = sub.scheduledAt != null && sub.scheduledAt > now ? sub.scheduledAt : null;
    const expiresAt = sub.expiresAt ?? null;
    if (expiresAt !== null && expiresAt <= now) throw new SmsError('INVALID_VALIDITY', 'validity period has already passed');
    if (expiresAt !== null && scheduledAt !== null && expiresAt <= scheduledAt) {
      throw new SmsError('INVALID_VALIDITY', 'validity period ends before the scheduled delivery time');
    }

    if (!route) throw new SmsError('NO_ROUTE', `no routing rule matches ${destination}`);
    const unitMicros = this.o.prices.unitMicros(destination, route.ruleId);
    const row: NewMessage = {
      id: newId('msg_', now),
      accountId: sub.accountId,
      ingress: sub.ingress,
      batchId: sub.batchId ?? null,
      reference: sub.reference ?? null,
      source: sender.source,
      sourceTon: sender.ton,
      sourceNpi: sender.npi,
      destination,
      body: sub.seal ? (sub.displayText ?? '') : (sub.text ?? sub.displayText ?? null),
      bodySealed: sub.seal && sub.text !== undefined ? this.o.sealer.encrypt(sub.text) : null,
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
      costMicros: unitMicros * segments,
      currency: policy.currency,
      customerSystemId: sub.customerSystemId ?? null,
      resendOf: sub.resendOf ?? null,
    };
    return { row, lane: sub.lane ?? laneOf({ priority }), unitMicros };
  }

  /**
   * The debit and the ledger, then the queue. One message: its debit commits with its row (LedgerWriter), so neither
   * can exist without the other. A bulk: debited first, as one amount for the batch (decided one after another against
   * the locked balance, so never overdrawn; see Billing), then written; a ledger failure voids the debit, and a crash
   * between the two is voided by the billing sweep.
   */
  private async commit(prepared: readonly Prepared[], reference: string): Promise<void> {
    if (prepared.length === 1) {
      const row = prepared[0].row;
      let fitted: boolean;
      try {
        fitted = await this.o.writer.accept(row, row.costMicros ?? 0);
      } catch (err) {
        if (err instanceof LedgerBusyError) throw new SmsError('BUSY', 'ledger writer is backed up; retry shortly', 200);
        throw unavailable(err, 'message not accepted');
      }
      if (!fitted) throw new SmsError('INSUFFICIENT_CREDIT', `the balance does not cover ${(row.costMicros ?? 0) / 1_000_000} for 1 message(s)`);
      this.enqueue(prepared);
      return;
    }
    const byAccount = new Map<string, number>();
    for (const p of prepared) byAccount.set(p.row.accountId, (byAccount.get(p.row.accountId) ?? 0) + (p.row.costMicros ?? 0));
    const debited: Array<[string, number]> = [];
    try {
      for (const [accountId, micros] of byAccount) {
        if (!(await this.o.billing.debit(accountId, micros, reference))) {
          throw new SmsError('INSUFFICIENT_CREDIT', `the balance does not cover ${micros / 1_000_000} for ${prepared.length} message(s)`);
        }
        debited.push([accountId, micros]);
      }
    } catch (err) {
      await this.voidAll(debited, reference);
      if (err instanceof SmsError) throw err;
      if (err instanceof LedgerBusyError) throw new SmsError('BUSY', 'debits are backed up; retry shortly', 200);
      throw unavailable(err, 'debit failed');
    }
    try {
      await this.o.writer.acceptMany(prepared.map((p) => p.row));
    } catch (err) {
      await this.voidAll(debited, reference);
      if (err instanceof LedgerBusyError) throw new SmsError('BUSY', 'ledger writer is backed up; retry shortly', 200);
      throw unavailable(err, 'message not accepted');
    }
    this.enqueue(prepared);
  }

  private enqueue(prepared: readonly Prepared[]): void {
    const now = this.clock();
    for (const p of prepared) {
      const item: PushItem<DispatchPayload> = { id: p.row.id, lane: p.lane, payload: { id: p.row.id }, runAt: p.row.scheduledAt ?? now, maxAttempts: this.o.maxAttempts };
      this.o.feeder.push(item);
    }
  }

  private async voidAll(debited: ReadonlyArray<[string, number]>, reference: string): Promise<void> {
    // If the void fails too, the billing sweep finds the debit without messages and voids it later.
    for (const [accountId, micros] of debited) await this.o.billing.void(accountId, micros, reference).catch(() => undefined);
  }

  private acceptedOf(p: Prepared): AcceptedSms {
    const r = p.row;
    return {
      messageId: r.id,
      status: r.scheduledAt != null ? 'scheduled' : 'queued',
      destination: r.destination,
      source: r.source,
      segments: r.segments,
      encoding: r.encoding,
      unitCostMicros: p.unitMicros,
      costMicros: r.costMicros ?? 0,
      currency: r.currency,
      acceptedAt: this.clock(),
      scheduledAt: r.scheduledAt ?? null,
      reference: r.reference ?? null,
    };
  }
}

/** Allow-list entries are numbers (exact) or prefixes ending in '*', with or without '+'; null allows anyone. */
function allowed(destination: string, list: readonly string[] | null | undefined): boolean {
  if (!list) return true;
  for (const raw of list) {
    const entry = raw.startsWith('+') ? raw.slice(1) : raw;
    if (entry.endsWith('*') ? destination.startsWith(entry.slice(0, -1)) : destination === entry) return true;
  }
  return false;
}

/** The lane a ledger row travels in (the reconciler pushes rows again with it). */
export function laneOf(rec: { priority: number }): Lane {
  return rec.priority >= 1 ? 'priority' : 'bulk';
}
