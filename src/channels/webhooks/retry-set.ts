import { DueSet } from '../../delivery/due-set.js';

/**
 * The retry set: open rows of webhook_deliveries (an attempt failed, an event waits behind one that did, a test event
 * or a replay), claimed straight from Postgres by due time (webhook_deliveries_due). Times are the database's (the rest
 * of the delivery log is written against now()); a claim moves the due time past its lease, so a crash brings the rows
 * back. Instances skip each other's claimed rows; no Redis.
 */
export const RETRY_SET = DueSet.declare({
  table: 'webhook_deliveries',
  id: 'id',
  due: 'next_attempt_at',
  clock: 'database',
  open: (row) => `${row}.status IN ('pending', 'failed')`,
});
