-- The outbound pipeline (src/outbound/): one row per job every non-SMPP product hands to a provider (messenger → Meta's
-- Cloud API, email → SMTP, push → FCM/APNs, voice, USSD, customers' apps). The product's own row stays in the product's
-- tables; the job references it by (product, message_id). A job is accepted when its row commits, in the product's
-- transaction; the queue (`outbound:<provider>`, Redis or SQL) only holds the work in flight, and the reconciler pushes
-- pending rows the queue lost. Times are epoch milliseconds from the pipeline's clock, like queue_items.
CREATE TABLE outbound_jobs (
  id text PRIMARY KEY,
  product text NOT NULL,
  provider text NOT NULL,
  account_id text NOT NULL,
  message_id text NOT NULL,
  -- 1 priority, 2 bulk (the queue lanes).
  lane smallint NOT NULL DEFAULT 2,
  payload jsonb NOT NULL,
  -- The product's state (its StateMachine); pending while the job is in the product's initial state, i.e. still to
  -- be sent. Every change appends a row to outbound_history.
  state text NOT NULL,
  pending boolean NOT NULL DEFAULT true,
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at bigint NOT NULL,
  deadline_at bigint NOT NULL,
  -- Set while one worker sends the job (its queue lease's end): another worker, or another instance, leaves the job
  -- alone until then; a crash leaves it to expire, and the next worker records that the earlier attempt's outcome
  -- is unknown (a possible duplicate).
  claimed_until bigint,
  provider_id text,
  -- The last failed attempt's error (or the failure's): Ferry's code, and the provider's own code verbatim.
  ferry_error text,
  provider_error text,
  error_message text,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);
-- The reconciler's pages (every pending job, by id) and the deadline sweep; both stay a small share of the table.
CREATE INDEX outbound_jobs_pending ON outbound_jobs (id) WHERE pending;
CREATE INDEX outbound_jobs_deadline ON outbound_jobs (deadline_at) WHERE pending;
-- The queue-age metric: the oldest pending job per provider.
CREATE INDEX outbound_jobs_oldest ON outbound_jobs (provider, created_at) WHERE pending;
-- Provider callbacks (statuses, DSNs) find the job by the provider's id.
CREATE INDEX outbound_jobs_provider_id ON outbound_jobs (provider, provider_id) WHERE provider_id IS NOT NULL;
CREATE INDEX outbound_jobs_message ON outbound_jobs (product, message_id);

-- Append-only history: kind 'state' (a change applied), 'late' (an update recorded but not applied: states never move
-- backwards), 'attempt' (a failed attempt that will be retried). Read only by job, in seq order; like message_events,
-- no key on seq and no foreign key check on the hot path.
CREATE TABLE outbound_history (
  seq bigint GENERATED ALWAYS AS IDENTITY,
  job_id text NOT NULL,
  kind text NOT NULL CHECK (kind IN ('state', 'late', 'attempt')),
  state text NOT NULL,
  at bigint NOT NULL,
  detail jsonb
);
CREATE INDEX outbound_history_job ON outbound_history (job_id, seq);
