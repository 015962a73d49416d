-- Receipts that matched no correlation within the correlator's hold (src/smpp/upstream/receipt-correlator.ts): the
-- SMSC sent them before Ferry recorded the submit_sm_resp's id (an SMSC faster than Ferry's write, or Ferry stalled
-- by load). They are acknowledged to the SMSC only once kept here, and applied when the correlation lands; rows older
-- than the keep time are dropped as unmatched. keys are the receipt id's lookup keys, in order of preference.
CREATE TABLE upstream_kept_receipts (
  id bigserial PRIMARY KEY,
  upstream_id text NOT NULL,
  keys text[] NOT NULL,
  receipt jsonb NOT NULL,
  kept_at bigint NOT NULL
);
CREATE INDEX upstream_kept_receipts_kept_at ON upstream_kept_receipts (kept_at);
