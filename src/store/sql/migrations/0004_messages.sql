-- The message ledger. A message is accepted when its row here is committed (ARCHITECTURE principle 1).
-- Rows are written in batches by src/ledger/ledger-writer.ts; state changes go through src/ledger/ledger.ts,
-- which appends every change (and every late, ignored receipt) to message_events.
CREATE TABLE messages (
  id text PRIMARY KEY,
  account_id text NOT NULL,
  channel text NOT NULL DEFAULT 'sms' CHECK (channel IN ('sms')),
  ingress text NOT NULL CHECK (ingress IN ('smpp', 'rest')),
  batch_id text,
  reference text,
  source text NOT NULL,
  source_ton smallint NOT NULL DEFAULT 0,
  source_npi smallint NOT NULL DEFAULT 0,
  destination text NOT NULL,
  -- Decoded text, or pre-encoded/binary user data sent as is under data_coding.
  body text,
  body_bytes bytea,
  data_coding smallint,
  esm_class smallint NOT NULL DEFAULT 0,
  -- Concatenation info when the customer split the message itself (one row per customer part).
  udh_ref integer,
  udh_total smallint,
  udh_seq smallint,
  segments integer NOT NULL DEFAULT 1,
  encoding text NOT NULL,
  priority smallint NOT NULL DEFAULT 0 CHECK (priority BETWEEN 0 AND 3),
  registered_delivery smallint NOT NULL DEFAULT 0,
  scheduled_at timestamptz,
  expires_at timestamptz,
  status text NOT NULL CHECK (status IN ('queued', 'scheduled', 'submitted', 'delivered', 'undelivered', 'expired', 'rejected', 'failed', 'cancelled')),
  error_code text,
  attempts integer NOT NULL DEFAULT 0,
  route_rule text,
  upstream_id text,
  parts_total integer NOT NULL DEFAULT 0,
  parts_done integer NOT NULL DEFAULT 0,
  cost_micros bigint NOT NULL DEFAULT 0,
  currency text NOT NULL,
  customer_system_id text,
  resend_of text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  final_at timestamptz,
  CHECK (body IS NOT NULL OR body_bytes IS NOT NULL)
);
CREATE INDEX messages_account_created ON messages (account_id, created_at);
-- The start-up sweep and "what is still open": only non-final rows, which stay a small share of the table.
CREATE INDEX messages_open ON messages (id) WHERE status IN ('queued', 'scheduled', 'submitted');
CREATE INDEX messages_account_reference ON messages (account_id, reference) WHERE reference IS NOT NULL;
CREATE INDEX messages_batch ON messages (batch_id) WHERE batch_id IS NOT NULL;

-- Status history, append-only. detail: {error, upstream, part, late, ...}.
CREATE TABLE message_events (
  id bigserial PRIMARY KEY,
  message_id text NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
  status text NOT NULL,
  at timestamptz NOT NULL DEFAULT now(),
  detail jsonb
);
CREATE INDEX message_events_message ON message_events (message_id, id);

-- Per-part state of messages Ferry split itself (one row per part sent upstream).
CREATE TABLE message_parts (
  message_id text NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
  part_index integer NOT NULL,
  upstream_id text,
  upstream_message_id text,
  status text NOT NULL,
  error_code text,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (message_id, part_index)
);
