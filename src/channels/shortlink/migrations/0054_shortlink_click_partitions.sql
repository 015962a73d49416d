-- The raw clicks partitioned by time (docs/shortlink.md, "Retention"): retention (retention.shortlink) drops a whole
-- partition once past it instead of deleting row by row at the cost of the inserts. The table so far becomes the
-- first partition (everything up to tomorrow, UTC); the daemon creates the next ones ahead
-- (src/store/sql/range-partitions.ts); a default partition takes a row no range covers, and its rows move into the
-- range's partition when that is made.

ALTER TABLE shortlink_clicks RENAME TO shortlink_clicks_p_before;
-- A unique constraint on a partitioned table must hold the partition key: (link_id, id, at). A click's id is made from
-- its time (newId('clk_', at)), so a click written twice (a batch retried) carries the same time and still conflicts.
-- The old table gets the same key first, which ATTACH then adopts. Building it is the migration's main cost (5 s for a
-- million clicks, under the rename's ACCESS EXCLUSIVE lock): an operator may build it beforehand without blocking,
--   CREATE UNIQUE INDEX CONCURRENTLY shortlink_clicks_key ON shortlink_clicks (link_id, id, at);
-- and the migration then takes that index as the key (docs/shortlink.md, "Retention").
DO $$
BEGIN
  IF to_regclass('shortlink_clicks_key') IS NOT NULL THEN
    ALTER INDEX shortlink_clicks_key RENAME TO shortlink_clicks_p_before_pkey;
    ALTER TABLE shortlink_clicks_p_before DROP CONSTRAINT shortlink_clicks_pkey,
      ADD CONSTRAINT shortlink_clicks_p_before_pkey PRIMARY KEY USING INDEX shortlink_clicks_p_before_pkey;
  ELSE
    ALTER TABLE shortlink_clicks_p_before DROP CONSTRAINT shortlink_clicks_pkey,
      ADD CONSTRAINT shortlink_clicks_p_before_pkey PRIMARY KEY (link_id, id, at);
  END IF;
END $$;
-- Retention selected batches by age through it; whole partitions go now.
DROP INDEX IF EXISTS shortlink_clicks_at;

CREATE TABLE shortlink_clicks (
  link_id text NOT NULL,
  id text NOT NULL,
  account_id text NOT NULL,
  at timestamptz NOT NULL,
  country text,
  device text NOT NULL,
  browser text,
  os text,
  referrer text,
  bot boolean NOT NULL,
  method text NOT NULL,
  outcome text NOT NULL,
  PRIMARY KEY (link_id, id, at)
) PARTITION BY RANGE (at);

-- A CHECK that proves the first partition's range lets ATTACH skip its own scan (VALIDATE reads the table once).
DO $$
DECLARE
  tomorrow timestamptz := (date_trunc('day', now() AT TIME ZONE 'UTC') + interval '1 day') AT TIME ZONE 'UTC';
BEGIN
  EXECUTE format('ALTER TABLE shortlink_clicks_p_before ADD CONSTRAINT shortlink_clicks_p_before_range CHECK (at < %L) NOT VALID', tomorrow);
  ALTER TABLE shortlink_clicks_p_before VALIDATE CONSTRAINT shortlink_clicks_p_before_range;
  EXECUTE format('ALTER TABLE shortlink_clicks ATTACH PARTITION shortlink_clicks_p_before FOR VALUES FROM (MINVALUE) TO (%L)', tomorrow);
END $$;
ALTER TABLE shortlink_clicks_p_before DROP CONSTRAINT shortlink_clicks_p_before_range;
CREATE TABLE shortlink_clicks_default PARTITION OF shortlink_clicks DEFAULT;
