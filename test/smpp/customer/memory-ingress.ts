// A stand-in for the SMS service, for the SMPP protocol-mapping tests only: it records what the SMPP layer hands
// over. The end-to-end tests through the real ledger live with the SMS service.
import type { AcceptedSms, SmsIngress, SmsSubmission } from '../../../src/messaging/types.js';
import type { MessageRecord, MessageStatus } from '../../../src/ledger/types.js';
import { newId } from '../../../src/util/ids.js';

export class MemoryIngress implements SmsIngress {
  readonly submissions: SmsSubmission[] = [];
  readonly records = new Map<string, MessageRecord>();
  /** When set, submit (or find / cancel) throws this instead of accepting. */
  failWith: ((sub: SmsSubmission) => Error | undefined) | undefined;
  failLookupsWith: Error | undefined;
  /** Resolves submit only once this promise does (to hold submissions in flight). */
  gate: Promise<void> | undefined;

  async submit(sub: SmsSubmission): Promise<AcceptedSms> {
    this.submissions.push(sub);
    if (this.gate) await this.gate;
    const err = this.failWith?.(sub);
    if (err) throw err;
    const id = newId('msg_');
    const now = Date.now();
    const status: MessageStatus = sub.scheduledAt && sub.scheduledAt > now ? 'scheduled' : 'queued';
    this.records.set(id, {
      id,
      accountId: sub.accountId,
      channel: 'sms',
      ingress: sub.ingress,
      batchId: sub.batchId ?? null,
      reference: sub.reference ?? null,
      source: sub.source,
      sourceTon: sub.sourceTon ?? 0,
      sourceNpi: sub.sourceNpi ?? 0,
      destination: sub.destination.replace(/^\+/, ''),
      body: sub.text ?? sub.displayText ?? null,
      bodySealed: null,
      bodyBytes: sub.bytes ?? null,
      dataCoding: sub.dataCoding ?? null,
      esmClass: sub.esmClass ?? 0,
      udhRef: sub.concat?.reference ?? null,
      udhTotal: sub.concat?.total ?? null,
      udhSeq: sub.concat?.seq ?? null,
      segments: 1,
      encoding: 'GSM-7',
      priority: sub.priority ?? 0,
      registeredDelivery: sub.registeredDelivery ?? 0,
      scheduledAt: sub.scheduledAt ?? null,
      expiresAt: sub.expiresAt ?? null,
      status,
      errorCode: null,
      attempts: 0,
      routeRule: null,
      upstreamId: null,
      upstreamMessageId: null,
      partsTotal: 1,
      partsDone: 0,
      costMicros: 0,
      currency: 'USD',
      customerSystemId: sub.customerSystemId ?? null,
      resendOf: sub.resendOf ?? null,
      createdAt: now,
      updatedAt: now,
      finalAt: null,
    });
    return {
      messageId: id,
      status,
      destination: sub.destination.replace(/^\+/, ''),
      source: sub.source,
      segments: 1,
      encoding: 'GSM-7',
      unitCostMicros: 0,
      costMicros: 0,
      currency: 'USD',
      acceptedAt: now,
      scheduledAt: sub.scheduledAt ?? null,
      reference: sub.reference ?? null,
    };
  }

  async cancel(messageId: string, accountId: string): Promise<boolean> {
    if (this.failLookupsWith) throw this.failLookupsWith;
    const r = this.records.get(messageId);
    if (!r || r.accountId !== accountId || (r.status !== 'queued' && r.status !== 'scheduled')) return false;
    r.status = 'cancelled';
    r.finalAt = Date.now();
    return true;
  }

  async find(messageId: string, accountId: string): Promise<MessageRecord | null> {
    if (this.failLookupsWith) throw this.failLookupsWith;
    const r = this.records.get(messageId);
    return r && r.accountId === accountId ? r : null;
  }

  /** Moves a recorded message to a status (as dispatch and receipts would). */
  setStatus(messageId: string, status: MessageStatus, finalAt: number | null = null): void {
    const r = this.records.get(messageId);
    if (!r) throw new Error(`no message ${messageId}`);
    r.status = status;
    r.finalAt = finalAt;
  }

  last(): SmsSubmission {
    const s = this.submissions.at(-1);
    if (!s) throw new Error('nothing submitted');
    return s;
  }
}
