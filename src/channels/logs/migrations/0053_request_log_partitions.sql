-- The request logs partitioned by time (docs/logs.md, "Retention"): retention drops a whole partition once it is past
-- logs.retentionDays instead of deleting row by row at the cost of the inserts. The table so far becomes the first
-- partition (everything up to tomorrow, UTC); the daemon creates the next ones ahead (src/store/sql/range-partitions.ts);
-- a default partition takes a row no range covers, and its rows move into the range's partition when that is made.
-- The partition key is a new created_at, the request's time (`at`) as a timestamptz (the writer sets it from `at`).

ALTER TABLE request_logs RENAME TO request_logs_p_before;
-- The sequence outlives the first partition, which retention drops one day.
ALTER SEQUENCE request_logs_id_seq OWNED BY NONE;
-- A unique constraint on a partitioned table must hold the partition key. Ids come from the sequence alone (never from
-- a caller), so they stay unique without one; every read by id is an account's (request_logs_account serves it).
ALTER TABLE request_logs_p_before DROP CONSTRAINT request_logs_pkey;
-- Rows so far take the migration's time: no rewrite (a non-volatile default is kept once in the catalog), and it is
-- at or after each row's `at`, which every time bound on created_at relies on (request-log-store.ts).
ALTER TABLE request_logs_p_before ADD COLUMN created_at timestamptz NOT NULL DEFAULT now();

CREATE TABLE request_logs (
  id bigint NOT NULL DEFAULT nextval('request_logs_id_seq'),
  request_id text NOT NULL,
  at bigint NOT NULL,
  method text NOT NULL,
  route text NOT NULL,
  path text NOT NULL,
  product text NOT NULL,
  status smallint NOT NULL,
  latency_ms real NOT NULL,
  key_id text,
  account_id text,
  client_ip text,
  user_agent text,
  idempotency_key text,
  error_code text,
  request_body text,
  response_body text,
  created_at timestamptz NOT NULL DEFAULT now()
) PARTITION BY RANGE (created_at);
-- The same indexes on the parent: ATTACH adopts the old table's (same definitions) instead of building them again.
ALTER INDEX request_logs_account RENAME TO request_logs_p_before_account;
ALTER INDEX request_logs_request_id RENAME TO request_logs_p_before_request_id;
ALTER INDEX request_logs_at RENAME TO request_logs_p_before_at;
ALTER INDEX request_logs_key RENAME TO request_logs_p_before_key;
-- GET /v1/logs: an account's rows, newest first, paged by id.
CREATE INDEX request_logs_account ON request_logs (account_id, id DESC);
CREATE INDEX request_logs_request_id ON request_logs (request_id);
-- The admin listing (by time) and the key statistics.
CREATE INDEX request_logs_at ON request_logs (at);
CREATE INDEX request_logs_key ON request_logs (key_id, at);

-- A CHECK that proves the first partition's range lets ATTACH skip its own scan; VALIDATE reads the table once under
-- a lock that lets reads through (SHARE UPDATE EXCLUSIVE), though the rename above already holds ACCESS EXCLUSIVE
-- until this migration commits.
DO $$
DECLARE
  tomorrow timestamptz := (date_trunc('day', now() AT TIME ZONE 'UTC') + interval '1 day') AT TIME ZONE 'UTC';
BEGIN
  EXECUTE format('ALTER TABLE request_logs_p_before ADD CONSTRAINT request_logs_p_before_range CHECK (created_at < %L) NOT VALID', tomorrow);
  ALTER TABLE request_logs_p_before VALIDATE CONSTRAINT request_logs_p_before_range;
  EXECUTE format('ALTER TABLE request_logs ATTACH PARTITION request_logs_p_before FOR VALUES FROM (MINVALUE) TO (%L)', tomorrow);
END $$;
-- Its work is done: the partition bound holds the same.
ALTER TABLE request_logs_p_before DROP CONSTRAINT request_logs_p_before_range;
CREATE TABLE request_logs_default PARTITION OF request_logs DEFAULT;
