import type { Logger } from 'pino';
import { Counter, Gauge, type Registry } from 'prom-client';
import { CommandStatus, DataCoding, EsmClass, Npi, Ton, statusName } from '../smpp/constants.js';
import { SmppQueueFullError } from '../smpp/errors.js';
import { MESSAGE_STATE_OF_STATUS, RECEIPT_STAT_OF_STATUS } from '../messaging/smpp-ingress/message-state.js';
import { smppMessageId } from '../messaging/smpp-ingress/smpp-message-id.js';
import type { PduInputOf } from '../smpp/pdu.js';
import { formatReceipt } from '../smpp/receipt.js';
import type { Session } from '../smpp/session.js';
import type { CustomerOutbox, OutboxEntry, ReceiptTaker } from './customer-outbox.js';

/** The part of the bind registry the worker needs: who can take a deliver_sm for an account. */
export interface ReceiverDirectory {
  accountsWithReceivers(): string[];
  pickReceiver(accountId: string): Session | undefined;
  on(event: 'receiverBound', listener: (accountId: string) => void): unknown;
}

export interface CustomerDeliveryOptions {
  outbox: CustomerOutbox;
  binds: ReceiverDirectory;
  log: Logger;
  registry?: Registry;
  /** Rows claimed per round (default 500). */
  batch?: number;
  /** How long a claimed row is held before another attempt may take it (default 30 s). */
  leaseMs?: number;
  /** deliver_sm_resp timeout (default 10 s). */
  responseTimeoutMs?: number;
  /** How long something owed to an account with no bind is kept (default 72 h). */
  retentionMs?: number;
  /** Poll interval when idle, for rows written by other instances (default 1 s). */
  pollMs?: number;
}

/**
 * Sends what customers' binds are owed: delivery receipts (deliver_sm, esm_class 0x04, receipt text plus the
 * receipted_message_id and message_state TLVs) and MO messages, to any receiver or transceiver bind of the account
 * on this instance. Rows stay in the outbox until the customer answers deliver_sm_resp OK, so receipts for a
 * customer that is not bound wait for its next bind (within the retention).
 *
 * Receipts of accounts bound here come straight from the ledger's commit, already leased (the ReceiptTaker side);
 * a claim round runs only when something else may be due: rows written while nobody took them, a new bind, a
 * wake, and once per poll interval.
 */
export class CustomerDelivery implements ReceiptTaker {
  private running = false;
  private loopDone: Promise<void> = Promise.resolve();
  private wakeUp: (() => void) | null = null;
  private woken = false;
  private claimDue = true;
  /** Rows handed over by the ledger's commits, oldest first; bounded by handOffMax (beyond it rows wait for claims). */
  private handed: OutboxEntry[] = [];
  private readonly handOffMax: number;
  private readonly batch: number;
  readonly leaseMs: number;
  private readonly timeoutMs: number;
  private readonly retentionMs: number;
  private readonly pollMs: number;
  private readonly sent: Counter<'kind' | 'outcome'> | undefined;
  private readonly dropped: Counter<'kind'> | undefined;

  constructor(private readonly o: CustomerDeliveryOptions) {
    this.batch = o.batch ?? 500;
    this.leaseMs = o.leaseMs ?? 30_000;
    this.timeoutMs = o.responseTimeoutMs ?? 10_000;
    this.retentionMs = o.retentionMs ?? 72 * 3_600_000;
    this.pollMs = o.pollMs ?? 1000;
    this.handOffMax = this.batch * 4;
    if (o.registry) {
      this.sent = new Counter({
        name: 'ferry_smpp_customer_deliveries_total',
        help: 'deliver_sm sent to customer binds by kind (receipt, mo) and outcome (ok, error status name, timeout, no_bind)',
        labelNames: ['kind', 'outcome'] as const,
        registers: [o.registry],
      });
      this.dropped = new Counter({
        name: 'ferry_smpp_customer_deliveries_dropped_total',
        help: 'Receipts and MO messages dropped after the retention because no bind of the account took them',
        labelNames: ['kind'] as const,
        registers: [o.registry],
      });
      const outbox = o.outbox;
      new Gauge({
        name: 'ferry_smpp_customer_pending',
        help: 'Receipts and MO messages waiting for a customer bind, by kind; read on scrape',
        labelNames: ['kind'] as const,
        registers: [o.registry],
        async collect() {
          try {
            const p = await outbox.pending();
            this.set({ kind: 'receipt' }, p.receipt);
            this.set({ kind: 'mo' }, p.mo);
          } catch {
            // database down: ferry_backend_up says so
          }
        },
      });
    }
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.o.binds.on('receiverBound', () => this.wake());
    this.o.outbox.handOffTo(this);
    this.loopDone = this.loop();
  }

  /** Something may be due in the outbox: the next round claims. */
  wake(): void {
    this.claimDue = true;
    this.signal();
  }

  takingFor(): readonly string[] {
    return this.running && this.handed.length < this.handOffMax ? this.o.binds.accountsWithReceivers() : [];
  }

  take(entries: OutboxEntry[]): void {
    if (!this.running) {
      // Committed while stopping: due again at once for whoever claims next, rather than after the lease.
      void this.releaseQuietly(entries.map((e) => e.id));
      return;
    }
    for (const e of entries) this.handed.push(e);
    this.signal();
  }

  owed(accountIds: readonly string[]): void {
    // Rows of accounts bound to no receiver here wait for a bind (receiverBound wakes); a claim now would find none.
    const bound = this.o.binds.accountsWithReceivers();
    if (accountIds.some((id) => bound.includes(id))) this.wake();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.o.outbox.handOffTo(null);
    this.signal();
    await this.loopDone;
    const left = this.handed;
    this.handed = [];
    await this.releaseQuietly(left.map((e) => e.id));
  }

  private signal(): void {
    // A signal while a round is running must not be lost: the next sleep then returns at once.
    this.woken = true;
    this.wakeUp?.();
  }

  private async releaseQuietly(ids: number[]): Promise<void> {
    try {
      await this.o.outbox.release(ids);
    } catch (err) {
      // They come back when their lease ends.
      this.o.log.warn({ err: (err as Error).message, count: ids.length }, 'outbox release failed');
    }
  }

  /**
   * Drops what waited past the retention for a bind of its account, counted and logged (the gateway's cluster job
   * `sms.customer-outbox-purge`, every minute). Rejects when the database refused.
   */
  async purge(): Promise<void> {
    const n = await this.o.outbox.purge(this.retentionMs);
    for (const kind of ['receipt', 'mo'] as const) {
      if (!n[kind]) continue;
      this.dropped?.inc({ kind }, n[kind]);
      this.o.log.warn({ kind, count: n[kind], retentionMs: this.retentionMs }, 'customer deliveries dropped after the retention: no bind took them');
    }
  }

  private async loop(): Promise<void> {
    while (this.running) {
      let rows = this.handed.splice(0, this.batch);
      if (this.claimDue && rows.length < this.batch) {
        this.claimDue = false;
        const accounts = this.o.binds.accountsWithReceivers();
        if (accounts.length) {
          try {
            const want = this.batch - rows.length;
            const claimed = await this.o.outbox.claim(accounts, want, this.leaseMs);
            if (claimed.length === want) this.claimDue = true; // more may be due
            rows = rows.length ? rows.concat(claimed) : claimed;
          } catch (err) {
            this.o.log.warn({ err: (err as Error).message }, 'outbox claim failed');
          }
        }
      }
      if (rows.length) await this.deliver(rows);
      if (!this.handed.length && !this.claimDue) await this.sleep(this.pollMs);
    }
  }

  /** Until a signal, or the poll interval, after which a claim round is due (rows other instances wrote, deferrals). */
  private sleep(ms: number): Promise<void> {
    if (this.woken) {
      this.woken = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.wakeUp = null;
        this.woken = false;
        resolve();
      };
      const timer = setTimeout(() => {
        this.claimDue = true;
        done();
      }, ms);
      this.wakeUp = done;
    });
  }

  private async deliver(rows: OutboxEntry[]): Promise<void> {
    const delivered: number[] = [];
    const unbound: number[] = [];
    const putOff: number[] = [];
    await Promise.all(
      rows.map(async (row) => {
        const session = this.o.binds.pickReceiver(row.accountId);
        const pdu = session && this.pduOf(row);
        if (!session || !pdu) {
          if (!pdu && session) delivered.push(row.id); // nothing renderable (message row deleted): drop it
          else unbound.push(row.id);
          this.sent?.inc({ kind: row.kind, outcome: 'no_bind' });
          return;
        }
        try {
          const resp = await session.request(pdu, { timeoutMs: this.timeoutMs });
          const ok = resp.command_status === CommandStatus.ESME_ROK;
          this.sent?.inc({ kind: row.kind, outcome: ok ? 'ok' : statusName(resp.command_status) });
          // A refused row is tried again after a lease's time; the retention bounds the retries.
          if (ok) delivered.push(row.id);
          else putOff.push(row.id);
        } catch (err) {
          // A full session queue is back-pressure, not a failure: the row is due again at once.
          if (err instanceof SmppQueueFullError) unbound.push(row.id);
          else putOff.push(row.id);
          this.sent?.inc({ kind: row.kind, outcome: err instanceof SmppQueueFullError ? 'queue_full' : 'timeout' });
        }
      }),
    );
    try {
      await this.o.outbox.remove(delivered);
      await this.o.outbox.release(unbound);
      await this.o.outbox.defer(putOff, this.leaseMs);
      // Released rows are due at once; while binds are taking rows (the release was a full queue), claim them now.
      if (unbound.length && delivered.length) this.claimDue = true;
    } catch (err) {
      // Removed rows come back after their lease: the customer may see a receipt twice (at-least-once).
      this.o.log.warn({ err: (err as Error).message, count: delivered.length }, 'outbox update failed after delivery');
    }
  }

  private pduOf(row: OutboxEntry): PduInputOf<'deliver_sm'> | undefined {
    if (row.kind === 'mo') {
      const payload = row.payload ?? Buffer.alloc(0);
      const big = payload.length > 254;
      return {
        command: 'deliver_sm',
        source_addr_ton: /^[0-9]{7,}$/.test(row.source ?? '') ? Ton.INTERNATIONAL : Ton.UNKNOWN,
        source_addr_npi: Npi.ISDN,
        source_addr: row.source ?? '',
        dest_addr_ton: Ton.UNKNOWN,
        dest_addr_npi: Npi.ISDN,
        destination_addr: row.destination ?? '',
        esm_class: row.esmClass ?? 0,
        data_coding: row.dataCoding ?? 0,
        short_message: big ? Buffer.alloc(0) : payload,
        ...(big ? { tlvs: { message_payload: payload } } : {}),
      };
    }
    const m = row.message;
    if (!m || !row.messageId || !row.status) return undefined;
    // The id the customer got in submit_sm_resp: letters and digits, which read the same in IA5 and GSM 03.38.
    const id = smppMessageId(row.messageId);
    const text = formatReceipt({
      id,
      stat: RECEIPT_STAT_OF_STATUS[row.status],
      submitDate: new Date(m.createdAt),
      doneDate: new Date(m.finalAt ?? row.createdAt),
      err: receiptErr(row.status, row.errorCode),
      text: asciiText(m.body ?? ''),
    });
    return {
      command: 'deliver_sm',
      // A receipt travels back: from the handset to the customer's sender.
      source_addr_ton: Ton.INTERNATIONAL,
      source_addr_npi: Npi.ISDN,
      source_addr: m.destination,
      dest_addr_ton: /^[0-9]+$/.test(m.source) ? Ton.INTERNATIONAL : Ton.ALPHANUMERIC,
      dest_addr_npi: /^[0-9]+$/.test(m.source) ? Npi.ISDN : Npi.UNKNOWN,
      destination_addr: m.source,
      esm_class: EsmClass.MC_DELIVERY_RECEIPT,
      // IA5 says what the bytes are. Clients that read it as GSM 03.38 anyway still read the id and every field but
      // the quoted text the same (letters, digits, ':' and space).
      data_coding: DataCoding.IA5,
      short_message: Buffer.from(text, 'latin1'),
      tlvs: { receipted_message_id: id, message_state: MESSAGE_STATE_OF_STATUS[row.status] },
    };
  }
}

/**
 * The receipt's err: field: 000 when delivered; the upstream's own code when it gave a numeric one; else 999 (a
 * Ferry-side end such as MAX_ATTEMPTS or NO_ROUTE, whose name the status API shows).
 */
function receiptErr(status: string, errorCode: string | null): string {
  if (status === 'delivered') return '000';
  if (errorCode && /^[0-9]{1,3}$/.test(errorCode)) return errorCode.padStart(3, '0');
  return '999';
}

// The receipt is IA5 (ASCII): keep the quoted text inside it.
function asciiText(s: string): string {
  return s.slice(0, 20).replace(/[^\x20-\x7e]/g, '?');
}
