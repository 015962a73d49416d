-- A call with an agent: the variables it was placed with, and its transcript (one row per line, in order).
ALTER TABLE voice_calls ADD COLUMN agent_variables jsonb;

CREATE TABLE voice_call_transcripts (
  call_id text NOT NULL,
  seq integer NOT NULL,
  at timestamptz NOT NULL DEFAULT now(),
  entry jsonb NOT NULL,
  PRIMARY KEY (call_id, seq)
);
