import type { Logger } from 'pino';
import type { AccountService } from '../accounts/account-service.js';
import type { EventOutbox } from '../events/event-outbox.js';
import type { Ledger } from '../ledger/ledger.js';
import type { Db } from '../store/types.js';
import { newId } from '../util/ids.js';
import { messageParts } from '../smpp/text/udh.js';
import type { UnmatchedReceipt, UpstreamMo, UpstreamReceipt } from '../smpp/upstream/outbound.js';
import type { CustomerOutbox } from './customer-outbox.js';
import { receiptErrorCode, statusOfReceiptState } from './receipt-state.js';

export interface ReceiptServiceOptions {
  db: Db;
  ledger: Ledger;
  outbox: CustomerOutbox;
  /** Webhook events (sms.inbound), written in the MO's transaction. */
  events?: EventOutbox;
  accounts: AccountService;
  log: Logger;
  /** An MO is owed to a customer (wakes the delivery worker; receipts reach it through the outbox's hand-off). */
  onOwed?: () => void;
  /** MO for a number no account owns. */
  onUnroutedMo?: () => void;
  /** Resolves when the message's submit record (if one is being written by this instance) is in the ledger. */
  submitRecorded?: (messageId: string) => Promise<void> | undefined;
  /** A USSD dialogue message (deliver_sm with ussd_service_op): handled by the USSD services, not stored as MO. */
  onUssd?: (mo: UpstreamMo) => void | Promise<void>;
}

// A receipt waits at most this long for its submit record; after that it is applied anyway (the record is late).
const RECORD_WAIT_MS = 5000;

function withTimeout(p: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]).finally(() => clearTimeout(timer));
}

/**
 * Upstream receipts and MO messages, on their way back to customers. A receipt becomes a ledger transition (which
 * writes the customer's receipt in the same transaction); a message Ferry split is final when every part is, and
 * delivered only when every part was delivered. The pool acknowledges the SMSC's deliver_sm only after this
 * resolves, so a crash before the commit makes the SMSC send it again.
 */
export class ReceiptService {
  constructor(private readonly o: ReceiptServiceOptions) {}

  readonly onReceipt = async (r: UpstreamReceipt): Promise<void> => {
    const recording = this.o.submitRecorded?.(r.messageId);
    if (recording) await withTimeout(recording, RECORD_WAIT_MS);
    const to = statusOfReceiptState(r.state);
    const errorCode = receiptErrorCode(r.errorCode);
    const detail: Record<string, unknown> = { upstream: r.upstreamId, upstreamMessageId: r.upstreamMessageId, stat: r.stat, err: r.errorCode ?? null, part: r.partIndex, parts: r.parts };
    if (r.source) detail.source = r.source;
    if (r.parts <= 1) {
      if (!to) return; // ENROUTE / ACCEPTD: nothing changes yet
      const res = await this.o.ledger.transition(r.messageId, to, detail, to === 'delivered' ? null : (errorCode ?? r.stat));
      if (res.outcome === 'not_found') this.o.log.warn({ messageId: r.messageId, upstream: r.upstreamId }, 'receipt for a message the ledger does not have');
      return;
    }
    const summary = await this.o.ledger.recordPart({
      messageId: r.messageId,
      partIndex: r.partIndex,
      status: to ?? 'submitted',
      upstreamId: r.upstreamId,
      upstreamMessageId: r.upstreamMessageId,
      errorCode: to === 'delivered' ? null : errorCode,
    });
    if (summary.pending > 0 || summary.total < r.parts) return;
    const final = summary.delivered === summary.total ? 'delivered' : to && to !== 'delivered' ? to : 'undelivered';
    await this.o.ledger.transition(
      r.messageId,
      final,
      { ...detail, delivered: summary.delivered, failed: summary.failed },
      final === 'delivered' ? null : (errorCode ?? `${summary.failed}_OF_${summary.total}_PARTS_FAILED`),
    );
  };

  readonly onUnmatchedReceipt = (r: UnmatchedReceipt): void => {
    // Kept in the log with everything needed to find it: the most common receipt bug is an id format mismatch.
    this.o.log.warn({ upstream: r.upstreamId, upstreamMessageId: r.upstreamMessageId, stat: r.stat }, 'receipt matched no message (check the upstream receiptIdFormat)');
  };

  /**
   * MO to a number an account owns: stored for the REST inbox (GET /v1/sms/inbound) and kept for the account's
   * receiver binds, in one transaction. Unowned numbers are logged, counted and dropped.
   */
  readonly onMo = async (mo: UpstreamMo): Promise<void> => {
    if (mo.pdu.tlvs?.ussd_service_op !== undefined && this.o.onUssd) return this.o.onUssd(mo);
    const destination = mo.destination.replace(/^\+/, '');
    const accountId = await this.o.accounts.ownerOfNumber(destination);
    if (!accountId) {
      this.o.onUnroutedMo?.();
      this.o.log.warn({ upstream: mo.upstreamId, destination }, 'MO message to a number no account owns; dropped');
      return;
    }
    const parts = messageParts(mo.pdu);
    // Sent on as received: the UDH (concatenation) stays in front of the text so the customer can join parts.
    const payload = mo.pdu.tlvs?.message_payload ?? mo.pdu.short_message;
    const moId = newId('mo_', mo.receivedAt);
    const source = mo.source.replace(/^\+/, '');
    await this.o.db.tx(async (q) => {
      await q.query(
        `INSERT INTO inbound_messages (id, account_id, source, destination, body, data_coding, upstream_id, received_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, to_timestamp($8::float8 / 1000.0))`,
        [moId, accountId, source, destination, mo.text, mo.dataCoding, mo.upstreamId, mo.receivedAt],
      );
      await this.o.events?.insert(q, {
        accountId,
        type: 'sms.inbound',
        messageKey: moId,
        data: { messageId: moId, from: source, to: destination, text: mo.text ?? null, receivedAt: new Date(mo.receivedAt).toISOString() },
      });
      await this.o.outbox.insertMo(
        { accountId, source: mo.source, destination, dataCoding: mo.dataCoding, esmClass: parts.concat?.via === 'udh' ? mo.esmClass : mo.esmClass & ~0x40, payload },
        q,
      );
    });
    this.o.onOwed?.();
  };
}
