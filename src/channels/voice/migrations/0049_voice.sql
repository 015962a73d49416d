-- Voice calls (src/channels/voice). A call is durable from POST: `queued` rows are claimed by an instance running the
-- media role, which then owns the call (owner, owner_until renewed while its SIP dialog and RTP socket carry it) and is
-- the only writer of its status. A call whose owner stopped renewing is ended as failed by any other media instance.
CREATE TABLE voice_calls (
  id text PRIMARY KEY,
  account_id text NOT NULL REFERENCES accounts (id),
  to_number text NOT NULL,
  from_number text NOT NULL,
  status text NOT NULL DEFAULT 'queued'
    CHECK (status IN ('queued', 'initiated', 'ringing', 'in-progress', 'completed', 'busy', 'no-answer', 'failed', 'canceled')),
  script jsonb NOT NULL,
  status_callback text,
  callback_events text[] NOT NULL DEFAULT '{}',
  ring_timeout_s integer NOT NULL,
  time_limit_s integer NOT NULL,
  machine_detection text NOT NULL DEFAULT 'off',
  reference text,
  -- When it may be dialled (a claim moves it past the claim's lease; the per-account and per-trunk limits push it on).
  dial_after timestamptz NOT NULL DEFAULT now(),
  owner text,
  owner_until timestamptz,
  hangup_requested boolean NOT NULL DEFAULT false,
  trunk text,
  trunks_tried text[] NOT NULL DEFAULT '{}',
  sip_call_id text,
  sip_code integer,
  sip_reason text,
  error_code text,
  error_reason text,
  digits text NOT NULL DEFAULT '',
  answered_by text,
  price_per_minute_micros bigint NOT NULL DEFAULT 0,
  held_seconds integer NOT NULL DEFAULT 0,
  billable_s integer,
  cost_micros bigint,
  created_at timestamptz NOT NULL DEFAULT now(),
  initiated_at timestamptz,
  ringing_at timestamptz,
  answered_at timestamptz,
  ended_at timestamptz
);
CREATE INDEX voice_calls_account ON voice_calls (account_id, id DESC);
CREATE INDEX voice_calls_due ON voice_calls (dial_after) WHERE status = 'queued';
CREATE INDEX voice_calls_live ON voice_calls (owner_until) WHERE status IN ('initiated', 'ringing', 'in-progress');
CREATE INDEX voice_calls_live_trunk ON voice_calls (trunk) WHERE status IN ('initiated', 'ringing', 'in-progress');
CREATE INDEX voice_calls_ended ON voice_calls (ended_at) WHERE ended_at IS NOT NULL;

-- Every status change, with what caused it (the SIP response, our CANCEL, a crash of the owner).
CREATE TABLE voice_call_history (
  id bigserial PRIMARY KEY,
  call_id text NOT NULL REFERENCES voice_calls (id) ON DELETE CASCADE,
  status text NOT NULL,
  detail jsonb NOT NULL DEFAULT '{}',
  at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX voice_call_history_call ON voice_call_history (call_id, id);

-- Trunks added at runtime (admin API, CLI); the config file's are not here. The password is sealed (AES-256-GCM under
-- a key derived for voice trunks), never stored in clear.
CREATE TABLE voice_trunks (
  name text PRIMARY KEY,
  config jsonb NOT NULL,
  password_sealed text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
