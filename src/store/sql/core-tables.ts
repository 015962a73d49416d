import type { TableDeclaration } from './table-declaration.js';

/**
 * The core's own tables that retention purges or table maintenance vacuums, in one place (a product declares its own
 * in its module: `tables`). Listed in purge order; the migrations creating them are in src/store/sql/migrations/.
 */
export const CORE_TABLES: readonly TableDeclaration[] = [
  // Done jobs of the outbound pipeline (sent or failed; later callbacks only add history) and their history. Updated
  // on every send attempt, claim and status.
  {
    name: 'outbound_jobs',
    vacuum: 'churn',
    retention: { family: 'outbound', ageColumn: 'updated_at', ageUnit: 'ms', finishedWhere: 'NOT pending', key: 'id', children: [{ table: 'outbound_history', column: 'job_id' }] },
  },
  // Events every enabled endpoint of the account has read past (its cursor's tick sees them) and whose every delivery
  // row ended (delivered or dead), with those rows. Events from before the event log (no txid) count as read.
  {
    name: 'webhook_events',
    vacuum: 'churn',
    retention: {
      family: 'webhooks',
      ageColumn: 'created_at',
      ageUnit: 'timestamptz',
      finishedWhere:
        `NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = webhook_events.id AND d.status IN ('pending', 'failed')) AND ` +
        `(webhook_events.txid IS NULL OR NOT EXISTS (SELECT 1 FROM webhook_cursors c JOIN webhook_endpoints e ON e.id = c.endpoint_id AND e.enabled ` +
        `AND e.account_id = webhook_events.account_id JOIN webhook_ticks k ON k.id = c.tick_id WHERE NOT pg_visible_in_snapshot(webhook_events.txid, k.snap)))`,
      key: 'id',
      children: [{ table: 'webhook_deliveries', column: 'event_id' }],
    },
  },
  // SMS messages in a final status (final_at is set then), their status history and parts.
  {
    name: 'messages',
    vacuum: 'ledger',
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
  // Rows come and go at message rates while few stay live: outboxes, the embedded queue, OTP codes, idempotency keys.
  { name: 'smpp_outbox', vacuum: 'churn' },
  { name: 'queue_items', vacuum: 'churn' },
  { name: 'otp_codes', vacuum: 'churn' },
  { name: 'otp_phones', vacuum: 'churn' },
  { name: 'idempotency_keys', vacuum: 'churn' },
  { name: 'webhook_deliveries', vacuum: 'churn' },
  // The event log's ticks (pruned behind the slowest cursor) and the cursors (written once per delivered batch).
  { name: 'webhook_ticks', vacuum: 'churn' },
  { name: 'webhook_cursors', vacuum: 'churn' },
];
