-- The REST SMS channel: inbound (MO) messages kept for the API, idempotency keys, and per-account recipient
-- allow-lists.

-- MO messages to numbers an account owns, for GET /v1/sms/inbound (newest first, keyset pagination).
CREATE TABLE inbound_messages (
  id text PRIMARY KEY,
  account_id text NOT NULL,
  source text NOT NULL,
  destination text NOT NULL,
  body text,
  data_coding smallint,
  upstream_id text,
  received_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX inbound_messages_account ON inbound_messages (account_id, received_at DESC, id DESC);

-- Idempotency-Key of POST /v1/sms/send and /v1/sms/bulk: one row per (account, key) for 24 hours. 'pending' while
-- the first request runs; 'done' keeps the response that is replayed to retries with the same request hash.
CREATE TABLE idempotency_keys (
  account_id text NOT NULL,
  key text NOT NULL,
  request_hash text NOT NULL,
  status text NOT NULL CHECK (status IN ('pending', 'done')),
  response_status integer,
  response jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (account_id, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);

-- Recipient prefixes (international digits) the account may send to; null = anywhere. Keys may narrow it further.
ALTER TABLE accounts ADD COLUMN allowed_recipients text[];

-- GET /v1/sms/status lists the resends of a message; only resends carry resend_of, so the index stays small.
CREATE INDEX messages_resend_of ON messages (resend_of) WHERE resend_of IS NOT NULL;
