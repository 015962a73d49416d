-- Inbound calls (src/channels/voice/inbound): which AI voice agent, or which browser dialer identity, answers a call
-- to one of an account's numbers (exactly one of the two).
-- One row per routed number (digits without '+', as account_numbers holds them). The number must be the account's:
-- the row goes with the number when the operator takes it from the account (ON DELETE CASCADE), so a number given to
-- the account again later starts unrouted, and the lookup checks the owner again anyway. Agents are only marked
-- deleted (0050), never removed, so a route to a deleted agent stays as a row but is dead: every read joins
-- voice_agents and ignores it (the API shows the number unrouted; the next PUT replaces it).
CREATE TABLE voice_number_routes (
  number text PRIMARY KEY REFERENCES account_numbers (number) ON DELETE CASCADE,
  account_id text NOT NULL REFERENCES accounts (id),
  agent_id text REFERENCES voice_agents (id),
  dialer_identity text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT voice_number_routes_one_target CHECK (num_nonnulls(agent_id, dialer_identity) = 1)
);
CREATE INDEX voice_number_routes_account ON voice_number_routes (account_id);
CREATE INDEX voice_number_routes_agent ON voice_number_routes (agent_id);

-- Whether Ferry placed the call (the API, the dialer) or answered it. Every call before this one was placed. The
-- check is added NOT VALID: the rows already there all hold the default, and checking them would read the whole
-- table while its writes wait; new and changed rows are checked all the same.
ALTER TABLE voice_calls ADD COLUMN direction text NOT NULL DEFAULT 'outbound';
ALTER TABLE voice_calls ADD CONSTRAINT voice_calls_direction CHECK (direction IN ('outbound', 'inbound')) NOT VALID;
