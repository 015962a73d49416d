import { decideDebits, type Debit } from '../billing/billing.js';
import { EVENT_ID_SQL, SUBSCRIBED_SQL } from '../events/event-outbox.js';
import { prepared } from '../store/sql/prepared.js';
import type { Db } from '../store/types.js';
import type { AccountMessageMetrics } from './account-metrics.js';
import { GroupCommit, type GroupCommitOptions, type GroupCommitStats } from './group-commit.js';
import type { NewMessage } from './types.js';

export interface LedgerWriterOptions extends GroupCommitOptions {
  /** Epoch ms; decides queued vs scheduled. */
  clock?: () => number;
  /** Counts the messages accepted per account, once their batch committed. */
  accountMetrics?: AccountMessageMetrics;
}

/*
 * One statement per batch: the INSERT of every row (one array parameter per column, so the statement text and its
 * parameter count never depend on the batch size) feeds the INSERT of their first events through a CTE. A single
 * statement is its own transaction: both tables commit together or not at all, in one round trip. The sms.queued
 * webhook event rides in the same statement (only for accounts with a subscribed endpoint), so it is never lost.
 */
const INSERT_SQL = prepared(`WITH ins AS (
  INSERT INTO messages (id, account_id, channel, ingress, batch_id, reference, source, source_ton, source_npi, destination,
    body, body_bytes, data_coding, esm_class, udh_ref, udh_total, udh_seq, segments, encoding, priority, registered_delivery,
    scheduled_at, expires_at, status, route_rule, cost_micros, currency, customer_system_id, resend_of, body_sealed)
  SELECT u.id, u.account_id, u.channel, u.ingress, u.batch_id, u.reference, u.source, u.source_ton, u.source_npi, u.destination,
    u.body, decode(u.body_hex, 'hex'), u.data_coding, u.esm_class, u.udh_ref, u.udh_total, u.udh_seq, u.segments, u.encoding,
    u.priority, u.registered_delivery, to_timestamp(u.scheduled_ms / 1000.0), to_timestamp(u.expires_ms / 1000.0), u.status,
    u.route_rule, u.cost_micros, u.currency, u.customer_system_id, u.resend_of, u.body_sealed
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::int[], $9::int[], $10::text[],
    $11::text[], $12::text[], $13::int[], $14::int[], $15::int[], $16::int[], $17::int[], $18::int[], $19::text[], $20::int[], $21::int[],
    $22::float8[], $23::float8[], $24::text[], $25::text[], $26::int8[], $27::text[], $28::text[], $29::text[], $30::text[])
    AS u(id, account_id, channel, ingress, batch_id, reference, source, source_ton, source_npi, destination,
      body, body_hex, data_coding, esm_class, udh_ref, udh_total, udh_seq, segments, encoding, priority, registered_delivery,
      scheduled_ms, expires_ms, status, route_rule, cost_micros, currency, customer_system_id, resend_of, body_sealed)
  RETURNING id, account_id, status, created_at, reference, source, destination
), ev AS (
  INSERT INTO message_events (message_id, status, at) SELECT id, status, created_at FROM ins
)
INSERT INTO webhook_events (id, account_id, type, message_key, payload, created_at)
  SELECT ${EVENT_ID_SQL}, ins.account_id, 'sms.queued', ins.id,
    jsonb_build_object('messageId', ins.id, 'reference', ins.reference, 'status', ins.status, 'to', ins.destination, 'from', ins.source, 'error', NULL),
    ins.created_at
  FROM ins WHERE ${SUBSCRIBED_SQL('ins.account_id', "'sms.queued'")}`);

const COLUMNS = 30;

interface Pending {
  row: NewMessage;
  /** Debited from the row's account in the same transaction as its INSERT; 0: nothing to debit. */
  debitMicros: number;
}

/**
 * Accepts messages into the ledger with group commit (one per process). `accept` resolves only once the row is
 * committed and rejects when its batch failed — callers then answer ESME_RSYSERR / 503, so nothing is acknowledged
 * that is not on disk. Beyond maxPending waiting rows it rejects at once with LedgerBusyError.
 *
 * A priced message's debit is written with its row: a batch holding any becomes one transaction that locks the
 * accounts, decides the debits in arrival order (see decideDebits), and writes the balances and the rows whose debit
 * fitted together. No debit without its message then, and no message without its debit, whatever fails or crashes.
 */
export class LedgerWriter {
  private readonly gc: GroupCommit<Pending, boolean>;
  private readonly clock: () => number;

  constructor(
    private readonly db: Db,
    private readonly opts: LedgerWriterOptions = {},
  ) {
    this.clock = opts.clock ?? Date.now;
    this.gc = new GroupCommit<Pending, boolean>((items) => this.writeBatch(items), opts);
  }

  /**
   * One message, debiting `debitMicros` from its account in the same commit. False when the balance does not cover
   * the debit: then nothing of it is written.
   */
  accept(row: NewMessage, debitMicros = 0): Promise<boolean> {
    return this.gc.submit({ row, debitMicros });
  }

  /** Bulk acceptance (REST batches, debited beforehand): same batch path, admitted all or nothing. */
  async acceptMany(rows: readonly NewMessage[]): Promise<void> {
    await this.gc.submitMany(rows.map((row) => ({ row, debitMicros: 0 })));
  }

  /** Writes what is pending now; resolves when it has settled. */
  flush(): Promise<void> {
    return this.gc.flush();
  }

  /** Flushes, then refuses new rows (LedgerClosedError). */
  close(): Promise<void> {
    return this.gc.close();
  }

  /** Batches / rows committed so far (what the tests and the benchmark read). */
  get stats(): Readonly<GroupCommitStats> {
    return this.gc.stats;
  }

  get pending(): number {
    return this.gc.pending;
  }

  private async writeBatch(items: Pending[]): Promise<boolean[]> {
    const out: boolean[] = new Array(items.length).fill(true);
    const debits: Debit[] = [];
    const debited: number[] = [];
    for (let i = 0; i < items.length; i++) {
      const it = items[i];
      if (it.debitMicros > 0) {
        debits.push({ accountId: it.row.accountId, micros: it.debitMicros, reference: it.row.id });
        debited.push(i);
      }
    }
    if (!debits.length) {
      // A single statement is its own transaction: one round trip.
      await this.db.query(INSERT_SQL, this.columns(items));
      this.counted(items, out);
      return out;
    }
    const decided = await this.db.tx(async (q) => {
      const { ok, write } = await decideDebits(q, debits);
      for (let k = 0; k < debited.length; k++) if (!ok[k]) out[debited[k]] = false;
      const rows = out.every(Boolean) ? items : items.filter((_, i) => out[i]);
      const written: Promise<unknown>[] = [];
      if (write) written.push(q.query(write.text, write.params));
      if (rows.length) written.push(q.query(INSERT_SQL, this.columns(rows)));
      q.commitNow();
      // Every statement settles before the transaction ends (the Db.tx contract), the first failure then rethrown.
      for (const r of await Promise.allSettled(written)) if (r.status === 'rejected') throw r.reason;
      return out;
    });
    this.counted(items, decided);
    return decided;
  }

  /** The committed rows of a batch (those `written` says), per account. */
  private counted(items: readonly Pending[], written: readonly boolean[]): void {
    const m = this.opts.accountMetrics;
    if (!m) return;
    for (let i = 0; i < items.length; i++) if (written[i]) m.acceptedOf(items[i].row.accountId);
  }

  /** The INSERT's parameters: one array per column. */
  private columns(items: readonly Pending[]): unknown[][] {
    const n = items.length;
    const cols: unknown[][] = new Array(COLUMNS);
    for (let c = 0; c < COLUMNS; c++) cols[c] = new Array(n);
    const now = this.clock();
    // Column-major fill in one pass: no per-row closures, no JSON.
    for (let i = 0; i < n; i++) {
      const r = items[i].row;
      cols[0][i] = r.id;
      cols[1][i] = r.accountId;
      cols[2][i] = r.channel ?? 'sms';
      cols[3][i] = r.ingress;
      cols[4][i] = r.batchId ?? null;
      cols[5][i] = r.reference ?? null;
      cols[6][i] = r.source;
      cols[7][i] = r.sourceTon ?? 0;
      cols[8][i] = r.sourceNpi ?? 0;
      cols[9][i] = r.destination;
      cols[10][i] = r.body ?? null;
      cols[11][i] = r.bodyBytes ? r.bodyBytes.toString('hex') : null;
      cols[12][i] = r.dataCoding ?? null;
      cols[13][i] = r.esmClass ?? 0;
      cols[14][i] = r.udhRef ?? null;
      cols[15][i] = r.udhTotal ?? null;
      cols[16][i] = r.udhSeq ?? null;
      cols[17][i] = r.segments;
      cols[18][i] = r.encoding;
      cols[19][i] = r.priority ?? 0;
      cols[20][i] = r.registeredDelivery ?? 0;
      cols[21][i] = r.scheduledAt ?? null;
      cols[22][i] = r.expiresAt ?? null;
      cols[23][i] = r.scheduledAt != null && r.scheduledAt > now ? 'scheduled' : 'queued';
      cols[24][i] = r.routeRule ?? null;
      cols[25][i] = r.costMicros ?? 0;
      cols[26][i] = r.currency;
      cols[27][i] = r.customerSystemId ?? null;
      cols[28][i] = r.resendOf ?? null;
      cols[29][i] = r.bodySealed ?? null;
    }
    return cols;
  }
}
