import type { TableDeclaration } from './table-declaration.js';

/**
 * The core's own tables that retention purges or table maintenance vacuums, in one place (a product declares its own
 * in its module: `tables`). Listed in purge order; the migrations creating them are in src/store/sql/migrations/.
 */
export const CORE_TABLES: readonly TableDeclaration[] = [
  // Done jobs of the outbound pipeline (sent or failed; later callbacks only add history) and their history. Updated
  // on every send attempt, claim and status. Partitioned by ranges of the job id, which carries its time (0056), the
  // history alike: a range past the retention goes whole, its jobs still pending moved to the default partitions first.
  {
    name: 'outbound_jobs',
    vacuum: 'churn',
    partitions: { column: 'id', idPrefix: 'job_', openWhere: 'pending' },
    retention: {
      family: 'outbound',
      ageColumn: 'updated_at',
      ageUnit: 'ms',
      finishedWhere: 'NOT pending',
      key: 'id',
      // Ids are newId('job_') from the pipeline's clock, which also stamps updated_at: a job is done only after it was made.
      keyTimeOrdered: 'job_',
      children: [{ table: 'outbound_history', column: 'job_id' }],
    },
  },
  // The event log, partitioned by time (0042): a partition past the retention is dropped once every enabled endpoint's
  // cursor has read past it (its tick's snapshot sees every transaction in it) and no open delivery row needs its
  // events. Events from before the event log (no txid) count as read. Append-only: vacuumed for its statistics.
  {
    name: 'webhook_events',
    vacuum: 'ledger',
    partitions: {
      column: 'created_at',
      dropWhen:
        `NOT EXISTS (SELECT 1 FROM webhook_deliveries d JOIN {partition} ev ON ev.seq = d.event_seq AND ev.id = d.event_id WHERE d.status IN ('pending', 'failed')) AND ` +
        `NOT EXISTS (SELECT 1 FROM webhook_cursors c JOIN webhook_endpoints e ON e.id = c.endpoint_id AND e.enabled JOIN webhook_ticks k ON k.id = c.tick_id ` +
        `WHERE pg_snapshot_xmin(k.snap) <= (SELECT max(txid) FROM {partition}))`,
    },
    retention: { family: 'webhooks', ageColumn: 'created_at', ageUnit: 'timestamptz' },
  },
  // Delivery rows: failed attempts and what waited behind them, test events, replays, and the sampled log of
  // successful attempts; purged by their own age once ended (few beside the events: a success writes none of its own).
  {
    name: 'webhook_deliveries',
    vacuum: 'churn',
    retention: { family: 'webhooks', ageColumn: 'created_at', ageUnit: 'timestamptz', finishedWhere: `status NOT IN ('pending', 'failed')` },
  },
  // SMS messages in a final status (final_at is set then), their status history and parts. Partitioned by ranges of
  // the message id, which carries its time (0055), the history and parts alike: a range past the retention goes whole,
  // its still-open messages moved to the default partitions first (purged there once final and past the retention).
  {
    name: 'messages',
    vacuum: 'ledger',
    // Open messages are those without final_at (0014's messages_open index serves that on each partition).
    partitions: { column: 'id', idPrefix: 'msg_', openWhere: 'final_at IS NULL', storage: 'fillfactor = 60' },
    retention: {
      family: 'sms',
      ageColumn: 'final_at',
      ageUnit: 'timestamptz',
      key: 'id',
      // Ids are newId('msg_'): the purge walks the primary key below the cutoff (no index on final_at, see 0014).
      keyTimeOrdered: 'msg_',
      children: [
        { table: 'message_events', column: 'message_id' },
        { table: 'message_parts', column: 'message_id' },
      ],
    },
  },
  { name: 'message_parts', vacuum: 'ledger' },
  { name: 'upstream_correlations', vacuum: 'ledger' },
  // Receipts that came before their submit's correlation, until it lands (few, short-lived).
  { name: 'upstream_kept_receipts', vacuum: 'churn' },
  // Credit holds (0048): written when work is dialled, updated once when it settles; kept with the account's history.
  { name: 'balance_holds', vacuum: 'ledger' },
  // Rows come and go at message rates while few stay live: outboxes, the embedded queue, OTP codes, idempotency keys.
  { name: 'smpp_outbox', vacuum: 'churn' },
  { name: 'queue_items', vacuum: 'churn' },
  { name: 'otp_codes', vacuum: 'churn' },
  { name: 'otp_phones', vacuum: 'churn' },
  { name: 'idempotency_keys', vacuum: 'churn' },
  // The event log's ticks (pruned behind the slowest cursor) and the cursors (written once per delivered batch).
  { name: 'webhook_ticks', vacuum: 'churn' },
  { name: 'webhook_cursors', vacuum: 'churn' },
];
