-- The event log partitioned by time (docs/webhooks.md, "Retention"): retention drops a whole partition once every
-- endpoint has read it and no open delivery needs its events, instead of deleting row by row at the cost of the
-- inserts. The table so far becomes the first partition (everything up to tomorrow, UTC); the daemon creates the next
-- ones ahead of time (src/store/sql/range-partitions.ts); a default partition takes a row no range covers, and its
-- rows move into the range's partition when that is created.

ALTER TABLE webhook_events RENAME TO webhook_events_p_before;
-- The sequence outlives the first partition, which retention drops one day.
ALTER SEQUENCE webhook_events_seq_seq OWNED BY NONE;
-- A foreign key cannot point into a partitioned table without the partition key; a delivery row is purged by its own age.
ALTER TABLE webhook_deliveries DROP CONSTRAINT IF EXISTS webhook_deliveries_event_id_fkey;
-- Events are found by their number, not their id: an index on random ids takes each insert to a random leaf of an
-- index that outgrows memory as the log grows (measured: Postgres CPU per event tripled with 10 million events),
-- where numbers only ever append. Ids stay unique without an index (evt_ + 128 random bits, never chosen by a caller).
ALTER TABLE webhook_events_p_before DROP CONSTRAINT webhook_events_pkey;
DROP INDEX IF EXISTS webhook_events_created;

CREATE TABLE webhook_events (
  seq bigint NOT NULL DEFAULT nextval('webhook_events_seq_seq'),
  id text NOT NULL,
  account_id text NOT NULL,
  type text NOT NULL,
  message_key text,
  payload jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  txid xid8 DEFAULT pg_current_xact_id()
) PARTITION BY RANGE (created_at);
-- A delivery row (retry set, delivery log) finds its event by number (webhook_deliveries.event_seq, and the id).
CREATE INDEX webhook_events_by_seq ON webhook_events (seq);
-- A cursor's batch: one account's events between two ticks' transaction bounds.
ALTER INDEX webhook_events_batch RENAME TO webhook_events_p_before_batch;
CREATE INDEX webhook_events_batch ON webhook_events (account_id, txid);

DO $$
BEGIN
  EXECUTE format('ALTER TABLE webhook_events ATTACH PARTITION webhook_events_p_before FOR VALUES FROM (MINVALUE) TO (%L)',
    (date_trunc('day', now() AT TIME ZONE 'UTC') + interval '1 day') AT TIME ZONE 'UTC');
END $$;
CREATE TABLE webhook_events_default PARTITION OF webhook_events DEFAULT;

-- Delivery rows (failed attempts, what waits behind them, test events, replays, the sampled log) are purged by their
-- own age once final; they are few beside the events (docs/webhooks.md).
DROP INDEX IF EXISTS webhook_deliveries_event;
CREATE INDEX webhook_deliveries_created ON webhook_deliveries (created_at);
