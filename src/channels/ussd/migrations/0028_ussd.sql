-- USSD (src/channels/ussd/): hosted menu trees with versions, the service codes accounts claim, aggregator connectors
-- (per-account authentication of Africa's Talking / Hubtel callbacks) and sessions with their transcripts. Times are
-- epoch milliseconds from the module's clock.
CREATE TABLE ussd_menus (
  id text PRIMARY KEY,
  account_id text NOT NULL REFERENCES accounts (id),
  name text NOT NULL,
  -- The version new sessions start on; null until the first publish. Sessions keep the version they started on.
  published_version integer,
  latest_version integer NOT NULL,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);
CREATE INDEX ussd_menus_account ON ussd_menus (account_id, id);

CREATE TABLE ussd_menu_versions (
  menu_id text NOT NULL REFERENCES ussd_menus (id) ON DELETE CASCADE,
  version integer NOT NULL,
  tree jsonb NOT NULL,
  created_at bigint NOT NULL,
  published_at bigint,
  PRIMARY KEY (menu_id, version)
);

-- A claimed code: '*384#' or an extension '*384*12#' (kept without '*' and '#': '384', '384*12'); unique across
-- accounts. Answered by a hosted menu or a customer's webhook app.
CREATE TABLE ussd_service_codes (
  id text PRIMARY KEY,
  account_id text NOT NULL REFERENCES accounts (id),
  code text NOT NULL UNIQUE,
  menu_id text REFERENCES ussd_menus (id),
  webhook_url text,
  dialect text NOT NULL DEFAULT 'africastalking',
  created_at bigint NOT NULL
);
CREATE INDEX ussd_service_codes_account ON ussd_service_codes (account_id, id);

CREATE TABLE ussd_connectors (
  id text PRIMARY KEY,
  account_id text NOT NULL REFERENCES accounts (id),
  dialect text NOT NULL,
  -- SHA-256 of the shared secret (shown once); null when only the IP allow-list authenticates.
  secret_hash text,
  allow_ips jsonb NOT NULL DEFAULT '[]',
  created_at bigint NOT NULL
);
CREATE INDEX ussd_connectors_account ON ussd_connectors (account_id, id);

CREATE TABLE ussd_sessions (
  id text PRIMARY KEY,
  account_id text NOT NULL REFERENCES accounts (id),
  service_code_id text NOT NULL,
  -- The claimed code and what the phone dialled ('*384*12*3#' pre-fills input 3 on claim '*384*12#').
  service_code text NOT NULL,
  dialled text NOT NULL,
  phone text NOT NULL,
  network_code text NOT NULL DEFAULT '',
  -- smpp, africastalking, hubtel, simulate
  channel text NOT NULL,
  -- The network's handle of the dialogue (upstream + phone + its_session_info, the aggregator's sessionId); a live
  -- session is found by it.
  network_key text NOT NULL,
  status text NOT NULL DEFAULT 'active',
  -- Success (the app ended it), Incomplete (the network or the phone did), Failed (an error, the apology shown)
  end_status text,
  error text,
  -- menu (menu_id, version) or webhook (url, dialect), fixed at the start
  app jsonb NOT NULL,
  -- position in the menu, pages of the current screen, inputs
  state jsonb NOT NULL,
  transcript jsonb NOT NULL DEFAULT '[]',
  hops integer NOT NULL DEFAULT 0,
  last_input text,
  resumed_from text,
  -- Bumped by every hop: a hop writes only over the version it read (hops of one session are serialised).
  version integer NOT NULL DEFAULT 0,
  started_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  ended_at bigint
);
CREATE UNIQUE INDEX ussd_sessions_live ON ussd_sessions (network_key) WHERE status = 'active';
CREATE INDEX ussd_sessions_account ON ussd_sessions (account_id, id DESC);
CREATE INDEX ussd_sessions_idle ON ussd_sessions (updated_at) WHERE status = 'active';
CREATE INDEX ussd_sessions_resume ON ussd_sessions (phone, service_code_id, ended_at) WHERE end_status = 'Incomplete';
