-- Credit held for work whose price is known only when it ends (a call reserves its longest duration when it is dialled
-- and settles at hang-up). A hold debits the balance at once (account_transactions kind '<module>_hold'); settling it
-- records what was charged and credits back the rest ('<module>_release'). One hold per (module, reference): asking
-- again for the same reference answers the same hold, so a retried dial never holds twice.
CREATE TABLE balance_holds (
  id text PRIMARY KEY,
  account_id text NOT NULL REFERENCES accounts (id),
  module text NOT NULL,
  reference text NOT NULL,
  held_micros bigint NOT NULL CHECK (held_micros >= 0),
  charged_micros bigint CHECK (charged_micros >= 0 AND charged_micros <= held_micros),
  status text NOT NULL DEFAULT 'held' CHECK (status IN ('held', 'settled')),
  created_at timestamptz NOT NULL DEFAULT now(),
  settled_at timestamptz,
  UNIQUE (module, reference)
);
CREATE INDEX balance_holds_open ON balance_holds (module, created_at) WHERE status = 'held';
