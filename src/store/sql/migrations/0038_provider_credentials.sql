-- Provider credentials per account (issue 43): a module's secrets for its providers (messenger business numbers, push
-- keys, voice trunks), sealed with a key derived for that module (AES-256-GCM, src/security/credential-store.ts; the
-- value is never returned, only a fingerprint). A rotation keeps the value before it readable until previous_until.
CREATE TABLE provider_credentials (
  account_id text NOT NULL,
  module text NOT NULL,
  name text NOT NULL,
  sealed text NOT NULL,
  version integer NOT NULL DEFAULT 1,
  previous_sealed text,
  previous_until bigint,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  PRIMARY KEY (account_id, module, name)
);
CREATE INDEX provider_credentials_module ON provider_credentials (module, name);
