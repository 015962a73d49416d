-- Webhooks: endpoints, the event outbox (written in the same transaction as the state change that caused each
-- event) and one delivery row per (endpoint, event), which is also the delivery log.
CREATE TABLE webhook_endpoints (
  id text PRIMARY KEY,
  account_id text NOT NULL,
  url text NOT NULL,
  events text[] NOT NULL,
  description text,
  enabled boolean NOT NULL DEFAULT true,
  secret_cipher text NOT NULL,
  previous_secret_cipher text,
  previous_valid_until timestamptz,
  failing_since timestamptz,
  disabled_reason text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_endpoints_by_account ON webhook_endpoints (account_id) WHERE enabled;

CREATE TABLE webhook_events (
  -- seq orders events (ids are random): deliveries of one message follow it.
  seq bigserial UNIQUE,
  id text PRIMARY KEY,
  account_id text NOT NULL,
  type text NOT NULL,
  message_key text,
  payload jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  fanned_out boolean NOT NULL DEFAULT false
);
CREATE INDEX webhook_events_unfanned ON webhook_events (seq) WHERE NOT fanned_out;

CREATE TABLE webhook_deliveries (
  id text PRIMARY KEY,
  endpoint_id text NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  event_id text NOT NULL REFERENCES webhook_events (id) ON DELETE CASCADE,
  event_seq bigint NOT NULL,
  message_key text,
  status text NOT NULL DEFAULT 'pending',
  attempts int NOT NULL DEFAULT 0,
  next_attempt_at timestamptz DEFAULT now(),
  last_status_code int,
  last_error text,
  last_latency_ms int,
  created_at timestamptz NOT NULL DEFAULT now(),
  delivered_at timestamptz,
  UNIQUE (endpoint_id, event_id)
);
CREATE INDEX webhook_deliveries_log ON webhook_deliveries (endpoint_id, created_at DESC, id DESC);
-- The ordering check (an earlier undelivered event of the same message for the endpoint) and the recovery sweep.
CREATE INDEX webhook_deliveries_open ON webhook_deliveries (endpoint_id, message_key, event_seq) WHERE status IN ('pending', 'failed');
