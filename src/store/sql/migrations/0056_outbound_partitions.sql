-- The outbound pipeline's jobs and their history partitioned by time, as the SMS ledger is (0055): by range of the job
-- id, which carries its creation time (newId('job_')), the history alike on job_id. A lookup by id reaches one
-- partition; retention drops a range of both tables whole once past retention.outbound, moving its jobs still pending
-- to the default partitions first (src/store/sql/range-partitions.ts, core-tables.ts).
--
-- Each table so far becomes its first partition (every id up to tomorrow's first, UTC); the daemon creates the next
-- ones ahead. The cost is one read of each old table under the rename's lock (the CHECKs' validation).

ALTER TABLE outbound_jobs RENAME TO outbound_jobs_p_before;
ALTER TABLE outbound_history RENAME TO outbound_history_p_before;

-- The history's seq was an identity column, which a partitioned table cannot have before Postgres 17: it becomes a
-- sequence of its own (outliving the first partition, which retention drops one day) that goes on from the last seq.
CREATE SEQUENCE outbound_history_seq;
SELECT setval('outbound_history_seq', coalesce((SELECT max(seq) FROM outbound_history_p_before), 0) + 1, false);
ALTER TABLE outbound_history_p_before ALTER COLUMN seq DROP IDENTITY;

-- The old tables keep their indexes, renamed; ATTACH adopts them for the parents' indexes of the same definition.
ALTER TABLE outbound_jobs_p_before RENAME CONSTRAINT outbound_jobs_pkey TO outbound_jobs_p_before_pkey;
ALTER INDEX outbound_jobs_deadline RENAME TO outbound_jobs_p_before_deadline;
ALTER INDEX outbound_jobs_oldest RENAME TO outbound_jobs_p_before_oldest;
ALTER INDEX outbound_jobs_provider_id RENAME TO outbound_jobs_p_before_provider_id;
ALTER INDEX outbound_jobs_message RENAME TO outbound_jobs_p_before_message;
ALTER INDEX outbound_jobs_done RENAME TO outbound_jobs_p_before_done;
ALTER INDEX outbound_jobs_due RENAME TO outbound_jobs_p_before_due;
ALTER INDEX outbound_history_job RENAME TO outbound_history_p_before_job;

CREATE TABLE outbound_jobs (LIKE outbound_jobs_p_before INCLUDING DEFAULTS INCLUDING CONSTRAINTS) PARTITION BY RANGE (id);
ALTER TABLE outbound_jobs ADD PRIMARY KEY (id);
CREATE INDEX outbound_jobs_deadline ON outbound_jobs (deadline_at) WHERE pending;
CREATE INDEX outbound_jobs_oldest ON outbound_jobs (provider, created_at) WHERE pending;
CREATE INDEX outbound_jobs_provider_id ON outbound_jobs (provider, provider_id) WHERE provider_id IS NOT NULL;
CREATE INDEX outbound_jobs_message ON outbound_jobs (product, message_id);
CREATE INDEX outbound_jobs_done ON outbound_jobs (updated_at) WHERE NOT pending;
CREATE INDEX outbound_jobs_due ON outbound_jobs (provider, lane, next_attempt_at) WHERE pending;

CREATE TABLE outbound_history (LIKE outbound_history_p_before INCLUDING CONSTRAINTS) PARTITION BY RANGE (job_id);
ALTER TABLE outbound_history ALTER COLUMN seq SET DEFAULT nextval('outbound_history_seq');
ALTER TABLE outbound_history ALTER COLUMN seq SET NOT NULL;
CREATE INDEX outbound_history_job ON outbound_history (job_id, seq);

CREATE TABLE outbound_jobs_default PARTITION OF outbound_jobs DEFAULT;
CREATE TABLE outbound_history_default PARTITION OF outbound_history DEFAULT;

DO $$
DECLARE
  -- idFloor('job_', tomorrow 00:00 UTC): 'job_', the time in ten base32 characters, then sixteen zeros.
  alphabet text := '0123456789abcdefghjkmnpqrstvwxyz';
  ms bigint := (extract(epoch FROM date_trunc('day', now() AT TIME ZONE 'UTC') + interval '1 day') * 1000)::bigint;
  digits text := '';
  bound text;
  spec record;
BEGIN
  FOR i IN 1..10 LOOP
    digits := substr(alphabet, (ms % 32)::int + 1, 1) || digits;
    ms := ms / 32;
  END LOOP;
  bound := 'job_' || digits || repeat('0', 16);
  FOR spec IN SELECT * FROM (VALUES ('outbound_jobs', 'id'), ('outbound_history', 'job_id')) AS v(t, c) LOOP
    -- An id at or past the bound (none that Ferry made) waits in the default partition instead of failing the migration.
    EXECUTE format('WITH moved AS (DELETE FROM %I WHERE %I >= %L RETURNING *) INSERT INTO %I SELECT * FROM moved',
      spec.t || '_p_before', spec.c, bound, spec.t);
    -- A CHECK that proves the range lets ATTACH skip its own scan (VALIDATE reads the table once).
    EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (%I < %L) NOT VALID', spec.t || '_p_before', spec.t || '_p_before_range', spec.c, bound);
    EXECUTE format('ALTER TABLE %I VALIDATE CONSTRAINT %I', spec.t || '_p_before', spec.t || '_p_before_range');
    EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (MINVALUE) TO (%L)', spec.t, spec.t || '_p_before', bound);
    EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', spec.t || '_p_before', spec.t || '_p_before_range');
  END LOOP;
END $$;
