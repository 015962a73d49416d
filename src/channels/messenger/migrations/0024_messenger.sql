-- The messenger product (src/channels/messenger/, issue 32). Messages are the product's rows; sending goes through
-- the outbound pipeline (outbound_jobs, keyed by (product 'messenger', message_id)). Times are epoch milliseconds.
CREATE TABLE messenger_messages (
  id text PRIMARY KEY,
  account_id text NOT NULL,
  business_number text NOT NULL,
  recipient text NOT NULL,
  type text NOT NULL,
  content jsonb NOT NULL,
  reference text,
  status text NOT NULL,
  job_id text NOT NULL,
  wamid text,
  ferry_error text,
  provider_error text,
  resent_from text,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);
CREATE INDEX messenger_messages_account ON messenger_messages (account_id, created_at);
CREATE INDEX messenger_messages_wamid ON messenger_messages (wamid) WHERE wamid IS NOT NULL;

-- The 24-hour customer service window (spec §3.2): opened by the user's last inbound message to the business number.
CREATE TABLE messenger_windows (
  business_number text NOT NULL,
  user_number text NOT NULL,
  last_inbound_at bigint NOT NULL,
  PRIMARY KEY (business_number, user_number)
);

-- Inbound user messages as the provider's webhook gave them (deduplicated by the provider's message id).
CREATE TABLE messenger_inbound (
  wamid text PRIMARY KEY,
  business_number text NOT NULL,
  user_number text NOT NULL,
  type text NOT NULL,
  content jsonb NOT NULL,
  received_at bigint NOT NULL
);

-- What Ferry knows of whether a number is on the platform, and where the answer came from.
CREATE TABLE messenger_contacts (
  phone text PRIMARY KEY,
  status text NOT NULL,
  source text NOT NULL,
  checked_at bigint NOT NULL
);

-- Message templates per account, with the provider's review status.
CREATE TABLE messenger_templates (
  account_id text NOT NULL,
  name text NOT NULL,
  language text NOT NULL,
  category text NOT NULL,
  components jsonb NOT NULL,
  status text NOT NULL,
  rejection_reason text,
  quality text,
  provider_id text,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  PRIMARY KEY (account_id, name, language)
);

-- The business number's quality rating and messaging tier as the provider last reported them.
CREATE TABLE messenger_quality (
  business_number text PRIMARY KEY,
  rating text NOT NULL,
  tier text,
  updated_at bigint NOT NULL
);
