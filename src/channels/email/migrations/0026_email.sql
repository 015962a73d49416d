-- Email (src/channels/email/, docs/email.md). One row per recipient of a send (email_messages); its delivery is an
-- outbound job (outbound_jobs, product 'email', message_id = email_messages.id) whose state the row mirrors. A
-- suppressed recipient gets a row in state 'dropped' and no job. Times are epoch milliseconds.
CREATE TABLE email_domains (
  id text PRIMARY KEY,
  account_id text NOT NULL,
  domain text NOT NULL,
  selector text NOT NULL,
  -- RSA 2048 private key (PKCS#8 PEM), encrypted with SecretCipher ("keyId:iv:tag:ct"); never returned by the API.
  private_key_cipher text NOT NULL,
  public_key text NOT NULL,
  dkim_verified boolean NOT NULL DEFAULT false,
  spf_verified boolean NOT NULL DEFAULT false,
  return_path_verified boolean NOT NULL DEFAULT false,
  checked_at bigint,
  created_at bigint NOT NULL
);
CREATE UNIQUE INDEX email_domains_account_domain ON email_domains (account_id, domain);

CREATE TABLE email_messages (
  id text PRIMARY KEY,
  account_id text NOT NULL,
  -- The send it belongs to (one per POST /send, or per personalization of /bulk).
  send_id text NOT NULL,
  stream text NOT NULL CHECK (stream IN ('transactional', 'bulk')),
  from_address text NOT NULL,
  recipient text NOT NULL,
  subject text NOT NULL,
  status text NOT NULL,
  tags jsonb NOT NULL DEFAULT '[]',
  metadata jsonb NOT NULL DEFAULT '{}',
  job_id text,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);
CREATE INDEX email_messages_account ON email_messages (account_id, created_at);

-- History that is not the outbound job's: a drop (no job), a DSN or complaint report as read, opens and clicks.
CREATE TABLE email_events (
  seq bigint GENERATED ALWAYS AS IDENTITY,
  message_id text NOT NULL,
  kind text NOT NULL,
  at bigint NOT NULL,
  detail jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX email_events_message ON email_events (message_id, seq);

-- Recipients that get no mail of a stream from an account: dropped at send time.
CREATE TABLE email_suppressions (
  account_id text NOT NULL,
  stream text NOT NULL CHECK (stream IN ('transactional', 'bulk')),
  address text NOT NULL,
  reason text NOT NULL CHECK (reason IN ('hard_bounce', 'complaint', 'unsubscribe', 'manual')),
  origin text NOT NULL,
  message_id text,
  created_at bigint NOT NULL,
  PRIMARY KEY (account_id, stream, address)
);

-- The content of one send (subject, html, text, attachments, headers), kept once for all its recipients; the
-- outbound jobs reference it (large bodies are not copied into every job's payload).
CREATE TABLE email_sends (
  id text PRIMARY KEY,
  account_id text NOT NULL,
  content jsonb NOT NULL,
  created_at bigint NOT NULL
);

-- Templates: Handlebars subject, html and text, rendered at send time (strict: a missing variable refuses the send).
CREATE TABLE email_templates (
  id text PRIMARY KEY,
  account_id text NOT NULL,
  name text NOT NULL,
  subject text NOT NULL,
  html text,
  text text,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);
CREATE INDEX email_templates_account ON email_templates (account_id, created_at);
