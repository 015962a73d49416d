-- The event log read through per-endpoint cursors (docs/webhooks.md, "How delivery works"). Events stay append-only:
-- no fan-out mark, no delivery row per (endpoint, event). Each event records the transaction that wrote it; a ticker
-- records snapshots (ticks) of which transactions had committed, and an endpoint's cursor is a tick: its next batch
-- is every event of its account visible in a later tick and not in its own (PgQ's batch rule). webhook_deliveries
-- keeps only what needs a row: failed attempts and what waits behind them (the retry set), test events, replays, and
-- a sample of successful first attempts for the delivery log.

-- Events of endpoints that exist now but were never fanned out go to the retry set first, so an upgrade loses none.
INSERT INTO webhook_deliveries (id, endpoint_id, event_id, event_seq, message_key)
  SELECT 'whd_' || replace(gen_random_uuid()::text, '-', ''), e.id, ev.id, ev.seq, ev.message_key
  FROM webhook_events ev JOIN webhook_endpoints e ON e.account_id = ev.account_id AND e.enabled AND e.events && ARRAY['*', ev.type]::text[]
  WHERE NOT ev.fanned_out
  ON CONFLICT (endpoint_id, event_id) DO NOTHING;

DROP INDEX IF EXISTS webhook_events_unfanned;
DROP INDEX IF EXISTS webhook_events_fanned;
ALTER TABLE webhook_events DROP COLUMN fanned_out;
-- seq still orders a batch (sorted in memory) and bounds a tick; nothing looks an event up by it.
ALTER TABLE webhook_events DROP CONSTRAINT IF EXISTS webhook_events_seq_key;
-- Rows from before this migration have none: they are never read as new.
ALTER TABLE webhook_events ADD COLUMN txid xid8;
ALTER TABLE webhook_events ALTER COLUMN txid SET DEFAULT pg_current_xact_id();
-- A batch: one account's events between two ticks' transaction bounds.
CREATE INDEX webhook_events_batch ON webhook_events (account_id, txid);
-- Retention selects by age.
CREATE INDEX webhook_events_created ON webhook_events (created_at);

CREATE TABLE webhook_ticks (
  id bigserial PRIMARY KEY,
  snap pg_snapshot NOT NULL,
  -- The event sequence's value when the snapshot was taken: every event visible in it has seq <= last_seq.
  last_seq bigint NOT NULL,
  at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO webhook_ticks (snap, last_seq) SELECT pg_current_snapshot(), COALESCE((SELECT max(seq) FROM webhook_events), 0);

-- One cursor per endpoint: the tick its events have been consumed up to, and which instance streams them now.
CREATE TABLE webhook_cursors (
  endpoint_id text PRIMARY KEY REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  tick_id bigint NOT NULL,
  owner text,
  lease_until timestamptz,
  delivered bigint NOT NULL DEFAULT 0,
  last_delivered_at timestamptz
);
INSERT INTO webhook_cursors (endpoint_id, tick_id) SELECT id, (SELECT max(id) FROM webhook_ticks) FROM webhook_endpoints;

-- The retry set's claim: open rows by due time.
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status IN ('pending', 'failed');

-- Batched delivery, an endpoint option: one signed POST carrying an array of up to batch_max_events events, sent
-- when that many are waiting or the oldest has waited batch_max_wait_ms. NULL: one event per POST.
ALTER TABLE webhook_endpoints ADD COLUMN batch_max_events int, ADD COLUMN batch_max_wait_ms int;
