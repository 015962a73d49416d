-- AI voice agents (src/channels/voice/agents). An agent points at its current version; every create and change adds
-- an immutable version holding the whole configuration, so a call keeps the version it started with. Keys (the
-- model's, the speech-to-text provider's) are sealed (AES-256-GCM under a key derived for voice agents), never stored
-- in clear, and the configuration holds them as null. A deleted agent is only marked: its versions stay for the calls
-- that started with them, which is why nothing here is ever removed.
CREATE TABLE voice_agents (
  id text PRIMARY KEY,
  account_id text NOT NULL REFERENCES accounts (id),
  name text NOT NULL,
  current_version integer NOT NULL CHECK (current_version >= 1),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  deleted_at timestamptz
);
CREATE INDEX voice_agents_account ON voice_agents (account_id, id DESC) WHERE deleted_at IS NULL;

CREATE TABLE voice_agent_versions (
  agent_id text NOT NULL REFERENCES voice_agents (id),
  version integer NOT NULL CHECK (version >= 1),
  config jsonb NOT NULL,
  llm_api_key_sealed text,
  stt_api_key_sealed text,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (agent_id, version)
);

-- The agent version a call talks with (null: a call without an agent).
ALTER TABLE voice_calls ADD COLUMN agent_id text, ADD COLUMN agent_version integer;
ALTER TABLE voice_calls ADD CONSTRAINT voice_calls_agent_version
  CHECK ((agent_id IS NULL) = (agent_version IS NULL));
ALTER TABLE voice_calls ADD CONSTRAINT voice_calls_agent_version_fk
  FOREIGN KEY (agent_id, agent_version) REFERENCES voice_agent_versions (agent_id, version);
CREATE INDEX voice_calls_agent ON voice_calls (agent_id) WHERE agent_id IS NOT NULL;
