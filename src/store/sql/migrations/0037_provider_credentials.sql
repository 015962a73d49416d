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

-- The messenger business numbers' credentials (0036) move here as they are: the messenger module's credential key is
-- the one that sealed them ('messenger-credentials'), so the ciphertexts are copied, not re-sealed, and nothing is lost.
INSERT INTO provider_credentials (account_id, module, name, sealed, created_at, updated_at)
  SELECT account_id, 'messenger', 'number:' || phone_number_id || ':accessToken', access_token_sealed, created_at, updated_at FROM messenger_numbers
  UNION ALL
  SELECT account_id, 'messenger', 'number:' || phone_number_id || ':appSecret', app_secret_sealed, created_at, updated_at FROM messenger_numbers
  UNION ALL
  SELECT account_id, 'messenger', 'number:' || phone_number_id || ':verifyToken', verify_token_sealed, created_at, updated_at FROM messenger_numbers
    WHERE verify_token_sealed IS NOT NULL;
ALTER TABLE messenger_numbers DROP COLUMN access_token_sealed;
ALTER TABLE messenger_numbers DROP COLUMN app_secret_sealed;
ALTER TABLE messenger_numbers DROP COLUMN verify_token_sealed;
