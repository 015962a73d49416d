-- Email re-engagement schedules (src/channels/email/schedules.ts): a template sent every interval to recipients of the
-- account's earlier mail who neither opened nor clicked for inactiveDays, at most once per capDays each, never in quiet
-- hours, never to suppressed (unsubscribed, bounced, complained) addresses. Times are epoch milliseconds.
CREATE TABLE email_schedules (
  id text PRIMARY KEY,
  account_id text NOT NULL,
  name text NOT NULL,
  template_id text NOT NULL,
  from_address text NOT NULL,
  inactive_days integer NOT NULL,
  cap_days integer NOT NULL,
  interval_minutes integer NOT NULL,
  quiet_start_hour smallint,
  quiet_end_hour smallint,
  max_per_run integer NOT NULL,
  next_run_at bigint NOT NULL,
  -- A run claims the schedule until then (another instance leaves it alone).
  claimed_until bigint,
  created_at bigint NOT NULL
);
CREATE INDEX email_schedules_due ON email_schedules (next_run_at);

CREATE TABLE email_schedule_runs (
  id text PRIMARY KEY,
  schedule_id text NOT NULL,
  at bigint NOT NULL,
  audience integer NOT NULL,
  sent integer NOT NULL,
  capped integer NOT NULL,
  suppressed integer NOT NULL,
  skipped_reason text
);
CREATE INDEX email_schedule_runs_schedule ON email_schedule_runs (schedule_id, at);

-- Messages sent by a schedule (frequency cap).
ALTER TABLE email_messages ADD COLUMN schedule_id text;
CREATE INDEX email_messages_schedule ON email_messages (schedule_id, recipient, created_at) WHERE schedule_id IS NOT NULL;
