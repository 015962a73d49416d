-- Accounts, API keys, SMPP credentials and operator settings.
-- Money is kept in micro-units (1/1,000,000 of the currency unit) as bigint: exact, and safe as a JS number.

CREATE TABLE accounts (
  id text PRIMARY KEY,
  name text NOT NULL UNIQUE,
  status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'suspended')),
  suspended_reason text,
  balance_micros bigint NOT NULL DEFAULT 0,
  currency text NOT NULL DEFAULT 'USD',
  default_country text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- Every balance change, for audit and reconciliation.
CREATE TABLE account_transactions (
  id bigserial PRIMARY KEY,
  account_id text NOT NULL REFERENCES accounts (id),
  amount_micros bigint NOT NULL,
  balance_after_micros bigint NOT NULL,
  kind text NOT NULL,
  reference text,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX account_transactions_account ON account_transactions (account_id, id);

CREATE TABLE api_keys (
  id text PRIMARY KEY,
  account_id text NOT NULL REFERENCES accounts (id),
  name text,
  environment text NOT NULL DEFAULT 'live',
  scopes text[] NOT NULL,
  -- keyed SHA-256 (HMAC) of the secret, hex; the secret itself is never stored
  secret_hash text NOT NULL,
  previous_secret_hash text,
  previous_valid_until timestamptz,
  allowed_recipients text[],
  created_at timestamptz NOT NULL DEFAULT now(),
  rotated_at timestamptz,
  last_used_at timestamptz,
  expires_at timestamptz,
  revoked_at timestamptz
);
CREATE INDEX api_keys_account ON api_keys (account_id);

CREATE TABLE smpp_credentials (
  system_id text PRIMARY KEY,
  account_id text NOT NULL REFERENCES accounts (id),
  -- scrypt$N$r$p$salt$hash (base64 parts)
  password_hash text NOT NULL,
  allowed_ips text[],
  max_binds integer NOT NULL DEFAULT 10,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX smpp_credentials_account ON smpp_credentials (account_id);

-- Small operator state that every instance must see (route switches, runtime upstreams).
CREATE TABLE settings (
  key text PRIMARY KEY,
  value jsonb NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);
