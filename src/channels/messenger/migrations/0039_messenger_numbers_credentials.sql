-- The messenger business numbers' credentials (0036) move into provider_credentials (core, 0038) as they are: the messenger module's credential key is
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
