-- One row per accepted POST /v1/sms/bulk: the request's totals as its answer gave them. The messages table holds only
-- the accepted items, so the rejected ones are counted here, and GET /v1/sms/batches/{id} reports the same total,
-- accepted and rejected as the bulk answer did.
CREATE TABLE sms_batches (
  id text PRIMARY KEY,
  account_id text NOT NULL,
  total integer NOT NULL CHECK (total >= 0),
  accepted integer NOT NULL CHECK (accepted >= 0),
  rejected integer NOT NULL CHECK (rejected >= 0),
  created_at timestamptz NOT NULL DEFAULT now(),
  CHECK (accepted + rejected = total)
);
