-- The SMPP gateway: what customers' binds are owed, the numbers accounts own, and per-account limits.

-- Deliveries owed to customer SMPP binds (receipts and MO messages), written in the same transaction as the
-- ledger change that caused them. An instance holding a receiver bind of the account claims rows (lease via
-- next_at), sends deliver_sm and deletes them on deliver_sm_resp OK. Rows older than the retention are purged
-- and counted. Receipt rows carry only the change: the PDU is rendered from the message row at send time.
CREATE TABLE smpp_outbox (
  id bigserial PRIMARY KEY,
  account_id text NOT NULL,
  kind text NOT NULL CHECK (kind IN ('receipt', 'mo')),
  message_id text,
  status text,
  error_code text,
  -- MO: the deliver_sm as received from the upstream (addresses, coding, user data).
  source text,
  destination text,
  data_coding smallint,
  esm_class smallint,
  payload bytea,
  attempts integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  next_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX smpp_outbox_account ON smpp_outbox (account_id, next_at, id);
CREATE INDEX smpp_outbox_created ON smpp_outbox (created_at);

-- Numbers (long codes, short codes) an account owns: MO messages to them go to that account's binds.
CREATE TABLE account_numbers (
  number text PRIMARY KEY,
  account_id text NOT NULL REFERENCES accounts (id),
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX account_numbers_account ON account_numbers (account_id);

-- Submits per second the account may make over SMPP and REST together (null: the server default).
ALTER TABLE accounts ADD COLUMN max_tps integer CHECK (max_tps IS NULL OR max_tps >= 0);
