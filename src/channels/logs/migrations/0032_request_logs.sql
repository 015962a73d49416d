-- The request logs (src/channels/logs): one row per answered /v1 request, written in batches off the request path.
-- Bodies are stored redacted (no Authorization, secret, password, token, OTP code or message text) and truncated;
-- rows older than logs.retentionDays are deleted by the module's retention pass. Times are epoch ms.
CREATE TABLE request_logs (
  id bigserial PRIMARY KEY,
  request_id text NOT NULL,
  at bigint NOT NULL,
  method text NOT NULL,
  -- The route pattern (/v1/sms/status/:messageId) and the path as asked, without its query.
  route text NOT NULL,
  path text NOT NULL,
  -- The first path segment after /v1 (sms, otp, webhooks, logs, keys, account…), for the key statistics.
  product text NOT NULL,
  status smallint NOT NULL,
  latency_ms real NOT NULL,
  -- NULL when the request carried no valid key (it is then visible to no account).
  key_id text,
  account_id text,
  client_ip text,
  user_agent text,
  idempotency_key text,
  error_code text,
  request_body text,
  response_body text
);
-- GET /v1/logs: an account's rows, newest first, paged by id.
CREATE INDEX request_logs_account ON request_logs (account_id, id DESC);
CREATE INDEX request_logs_request_id ON request_logs (request_id);
-- Retention and the key statistics.
CREATE INDEX request_logs_at ON request_logs (at);
CREATE INDEX request_logs_key ON request_logs (key_id, at);
