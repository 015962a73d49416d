-- Mobile push (issue 45). Apps hold the references to their provider credentials (sealed in the platform's
-- credential store, never here); devices are upserted by (app, token); topics live in Ferry, so they behave the same
-- on FCM and APNs. A send is one row with counters: a device that got its push costs a counter, not a row; only
-- what failed or was invalidated gets a row in push_send_outcomes (and a single device's send, its one outcome).
-- The work itself is outbound jobs (one per batch of devices of one app and service), claimed by the one pipeline.
CREATE TABLE push_apps (
  id text PRIMARY KEY,
  account_id text NOT NULL,
  name text NOT NULL,
  -- FCM: the project of the uploaded service account; APNs: the bundle id and default environment of the key.
  fcm_project_id text,
  apns_bundle_id text,
  apns_environment text CHECK (apns_environment IN ('sandbox', 'production')),
  -- Provider base URLs (fcm, oauthToken, apns; absent: the real services, or the simulators in the embedded default).
  endpoints jsonb NOT NULL DEFAULT '{}',
  -- Set when a provider rejected the app's credentials: its sends wait (not fail) until the credentials change.
  paused_service text,
  paused_reason text,
  paused_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX push_apps_account ON push_apps (account_id, id);

CREATE TABLE push_devices (
  id text PRIMARY KEY,
  account_id text NOT NULL,
  app_id text NOT NULL REFERENCES push_apps (id) ON DELETE CASCADE,
  token text NOT NULL,
  platform text NOT NULL CHECK (platform IN ('android', 'ios', 'web')),
  -- APNs environment of an iOS token (sandbox builds get sandbox tokens); null: the app's default.
  environment text CHECK (environment IN ('sandbox', 'production')),
  user_id text,
  locale text,
  timezone text,
  tags text[] NOT NULL DEFAULT '{}',
  status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'invalid')),
  invalid_reason text,
  invalidated_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX push_devices_token ON push_devices (app_id, token);
CREATE INDEX push_devices_account ON push_devices (account_id, id);
CREATE INDEX push_devices_user ON push_devices (account_id, user_id, created_at) WHERE user_id IS NOT NULL;

-- size: subscriptions, kept by the statements that add and remove them (GET /topics/:name without a count).
CREATE TABLE push_topics (
  account_id text NOT NULL,
  name text NOT NULL,
  size integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (account_id, name)
);
-- The primary key orders a topic's devices: fan-out walks it by device id from a cursor.
CREATE TABLE push_topic_subscriptions (
  account_id text NOT NULL,
  topic text NOT NULL,
  device_id text NOT NULL REFERENCES push_devices (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (account_id, topic, device_id)
);
CREATE INDEX push_topic_subscriptions_device ON push_topic_subscriptions (device_id);

CREATE TABLE push_sends (
  id text PRIMARY KEY,
  account_id text NOT NULL,
  target_kind text NOT NULL CHECK (target_kind IN ('device', 'user', 'topic')),
  target text NOT NULL,
  -- notification, data, priority, ttlSeconds, collapseKey: what every device of the send gets.
  message jsonb NOT NULL,
  -- expanding: devices are still being found (fan-out); sending: every device has its batch; completed: every batch ended.
  status text NOT NULL CHECK (status IN ('expanding', 'sending', 'completed')),
  -- Fan-out: the last device id expanded; the expansion claims the row like a due set (next_expand_at, claimed_until).
  cursor text,
  next_expand_at timestamptz,
  claimed_until timestamptz,
  targeted integer NOT NULL DEFAULT 0,
  sent integer NOT NULL DEFAULT 0,
  failed integer NOT NULL DEFAULT 0,
  invalidated integer NOT NULL DEFAULT 0,
  -- Devices in batches that have not ended yet.
  pending integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  completed_at timestamptz
);
CREATE INDEX push_sends_account ON push_sends (account_id, id);
CREATE INDEX push_sends_expanding ON push_sends (next_expand_at) WHERE status = 'expanding';

CREATE TABLE push_send_outcomes (
  send_id text NOT NULL REFERENCES push_sends (id) ON DELETE CASCADE,
  device_id text NOT NULL,
  status text NOT NULL CHECK (status IN ('sent', 'failed', 'invalidated')),
  provider_id text,
  error text,
  provider_error text,
  message text,
  at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (send_id, device_id)
);
