-- Sessions of the /logs page (src/channels/logs/log-page.ts): signed in with an API key holding logs:read, kept here
-- so that any instance serves them. Only a SHA-256 of the session token is stored; the key's secret never is.
CREATE TABLE log_sessions (
  token_hash text PRIMARY KEY,
  account_id text NOT NULL,
  key_id text NOT NULL,
  created_at bigint NOT NULL,
  expires_at bigint NOT NULL
);
CREATE INDEX log_sessions_expires ON log_sessions (expires_at);
