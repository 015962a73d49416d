-- Embedded equivalents of the Redis roles: the durable work queue and the OTP store.
-- Times are epoch milliseconds (bigint) taken from the caller's clock, like the Redis scripts,
-- so both implementations agree and tests can control time.

-- One row per queued item of every queue.
-- lane: 0 receipt, 1 priority, 2 bulk (the serving order).  state: 0 ready, 1 leased, 2 dead.
-- visible_at is when the row may be leased: run_at while ready, the lease deadline while leased,
-- so an expired lease is simply due again in its lane (no sweeper needed).
CREATE TABLE queue_items (
  queue text NOT NULL,
  id text NOT NULL,
  lane smallint NOT NULL,
  state smallint NOT NULL DEFAULT 0,
  run_at bigint NOT NULL,
  visible_at bigint NOT NULL,
  attempts integer NOT NULL DEFAULT 0,
  max_attempts integer NOT NULL,
  last_error text,
  dead_at bigint,
  seq bigint GENERATED ALWAYS AS IDENTITY,
  -- JSON text: stored and returned as is, never looked into by SQL.
  payload text NOT NULL,
  PRIMARY KEY (queue, id)
);
-- Serves lease: one index range per lane, in due order.
CREATE INDEX queue_items_due ON queue_items (queue, lane, visible_at, seq) WHERE state < 2;
CREATE INDEX queue_items_dead ON queue_items (queue, dead_at) WHERE state = 2;

-- One row per OTP, deleted when verified; kept readable (as expired/locked) until retain_until.
CREATE TABLE otp_codes (
  id text PRIMARY KEY,
  account_id text NOT NULL,
  phone text NOT NULL,
  code_cipher text NOT NULL,
  code_hash text NOT NULL,
  created_at bigint NOT NULL,
  expires_at bigint NOT NULL,
  last_sent_at bigint NOT NULL,
  max_attempts integer NOT NULL,
  attempts_left integer NOT NULL,
  meta text NOT NULL,
  retain_until bigint NOT NULL
);
CREATE INDEX otp_codes_phone ON otp_codes (account_id, phone, expires_at);
CREATE INDEX otp_codes_retain ON otp_codes (retain_until);

-- One row per (account, phone): the lock that serialises creates, and the recent create
-- times for the sliding-window rate limit (verified codes are deleted, so they can't be counted).
CREATE TABLE otp_phones (
  account_id text NOT NULL,
  phone text NOT NULL,
  hits bigint[] NOT NULL DEFAULT '{}',
  -- when every hit has left the window: the row may then be purged
  idle_after bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (account_id, phone)
);
CREATE INDEX otp_phones_idle ON otp_phones (idle_after);
