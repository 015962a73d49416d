-- Messenger business numbers (issue 42): a phone number id belongs to one account, with its own credentials (sealed
-- with the daemon's key: AES-256-GCM, src/channels/messenger/sealed-credentials.ts; never returned). The number in the
-- config (messenger.phoneNumberId) is not a row here. A WhatsApp business account id (WABA) belongs to one account too.
CREATE TABLE messenger_numbers (
  phone_number_id text PRIMARY KEY,
  account_id text NOT NULL,
  display_number text,
  waba_id text,
  access_token_sealed text NOT NULL,
  app_secret_sealed text NOT NULL,
  verify_token_sealed text,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);
CREATE INDEX messenger_numbers_account ON messenger_numbers (account_id, created_at);
CREATE INDEX messenger_numbers_waba ON messenger_numbers (waba_id) WHERE waba_id IS NOT NULL;

-- What Ferry knows of a user is per business number (an account's number learns for that account only). Existing
-- rows go to every business number that has written to or heard from that user; a user no number knows is forgotten
-- (it is a cache of the platform's answer: asked again).
CREATE TABLE messenger_contacts_by_number (
  business_number text NOT NULL,
  phone text NOT NULL,
  status text NOT NULL,
  source text NOT NULL,
  checked_at bigint NOT NULL,
  PRIMARY KEY (business_number, phone)
);
INSERT INTO messenger_contacts_by_number (business_number, phone, status, source, checked_at)
  SELECT DISTINCT n.business_number, c.phone, c.status, c.source, c.checked_at
  FROM messenger_contacts c
  JOIN (SELECT business_number, recipient AS phone FROM messenger_messages
        UNION SELECT business_number, user_number FROM messenger_inbound) n ON n.phone = c.phone;
DROP TABLE messenger_contacts;
ALTER TABLE messenger_contacts_by_number RENAME TO messenger_contacts;

-- A template's review is its WABA's: the status webhook names the WABA (entry.id). NULL: the config's WABA (every row
-- made before numbers existed was made there).
ALTER TABLE messenger_templates ADD COLUMN waba_id text;
CREATE INDEX messenger_templates_review ON messenger_templates (name, language);

-- An inbound message belongs to the account that owns the number it reached (NULL: the config's shared number).
ALTER TABLE messenger_inbound ADD COLUMN account_id text;
-- The shared number's inbound goes to the accounts that wrote to that user from it: found by index, not by a scan.
CREATE INDEX messenger_messages_recipient ON messenger_messages (business_number, recipient, account_id);
