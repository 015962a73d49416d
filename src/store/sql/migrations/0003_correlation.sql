-- Receipt correlation: (upstream, upstream message id) → Ferry message id and part. Durable so a receipt is
-- matched after a restart and on whichever instance it arrives. upstream_key is the canonical id (lower case,
-- no leading zeros, converted to the form the upstream's receipts use). created_at is epoch ms from the caller's
-- clock; rows older than the retention are purged (a receipt later than that comes back unmatched).
CREATE TABLE upstream_correlations (
  upstream_id text NOT NULL,
  upstream_key text NOT NULL,
  message_id text NOT NULL,
  part_index integer NOT NULL,
  parts integer NOT NULL,
  created_at bigint NOT NULL,
  PRIMARY KEY (upstream_id, upstream_key)
);
CREATE INDEX upstream_correlations_created ON upstream_correlations (created_at);
