-- The SMS ledger partitioned by time (docs/scaling.md, "Partitioned tables"): messages, their status history and their
-- parts by range of the message id, which carries its creation time (src/util/ids.ts newId: ten characters of
-- milliseconds first, lower-case base32, so ids sort by time in every collation). A lookup by id then reaches one
-- partition with no time beside it, and the primary key stays the id alone. The three tables share their bounds;
-- retention drops a range of all three whole once past retention.sms, moving the few rows still needed (open, or final
-- only lately) to the default partitions first (src/store/sql/range-partitions.ts).
--
-- Each table so far becomes its first partition (every id up to tomorrow's first, UTC); the daemon creates the next
-- ones ahead. The cost is one read of each old table under the rename's lock (the CHECKs' validation, which lets ATTACH
-- skip its own): measured in docs/scaling.md.

ALTER TABLE messages RENAME TO messages_p_before;
ALTER TABLE message_events RENAME TO message_events_p_before;
ALTER TABLE message_parts RENAME TO message_parts_p_before;
-- The sequence outlives the first partition, which retention drops one day.
ALTER SEQUENCE message_events_id_seq OWNED BY NONE;

-- The old tables keep their indexes, renamed; ATTACH adopts them for the parents' indexes of the same definition.
ALTER TABLE messages_p_before RENAME CONSTRAINT messages_pkey TO messages_p_before_pkey;
ALTER INDEX messages_account_created RENAME TO messages_p_before_account_created;
ALTER INDEX messages_account_reference RENAME TO messages_p_before_account_reference;
ALTER INDEX messages_batch RENAME TO messages_p_before_batch;
ALTER INDEX messages_resend_of RENAME TO messages_p_before_resend_of;
ALTER INDEX messages_open RENAME TO messages_p_before_open;
ALTER INDEX message_events_message RENAME TO message_events_p_before_message;
ALTER TABLE message_parts_p_before RENAME CONSTRAINT message_parts_pkey TO message_parts_p_before_pkey;

-- Same columns, defaults and checks as before. A partitioned table has no storage parameters: each messages partition
-- gets fillfactor 60 when made (core-tables.ts; 0014 says why).
CREATE TABLE messages (LIKE messages_p_before INCLUDING DEFAULTS INCLUDING CONSTRAINTS) PARTITION BY RANGE (id);
ALTER TABLE messages ADD PRIMARY KEY (id);
CREATE INDEX messages_account_created ON messages (account_id, created_at);
CREATE INDEX messages_account_reference ON messages (account_id, reference) WHERE reference IS NOT NULL;
CREATE INDEX messages_batch ON messages (batch_id) WHERE batch_id IS NOT NULL;
CREATE INDEX messages_resend_of ON messages (resend_of) WHERE resend_of IS NOT NULL;
CREATE INDEX messages_open ON messages (id) WHERE final_at IS NULL;

CREATE TABLE message_events (LIKE message_events_p_before INCLUDING DEFAULTS INCLUDING CONSTRAINTS) PARTITION BY RANGE (message_id);
CREATE INDEX message_events_message ON message_events (message_id, id);

CREATE TABLE message_parts (LIKE message_parts_p_before INCLUDING DEFAULTS INCLUDING CONSTRAINTS) PARTITION BY RANGE (message_id);
ALTER TABLE message_parts ADD PRIMARY KEY (message_id, part_index);

CREATE TABLE messages_default PARTITION OF messages DEFAULT WITH (fillfactor = 60);
CREATE TABLE message_events_default PARTITION OF message_events DEFAULT;
CREATE TABLE message_parts_default PARTITION OF message_parts DEFAULT;

DO $$
DECLARE
  -- idFloor('msg_', tomorrow 00:00 UTC): 'msg_', the time in ten base32 characters, then sixteen zeros.
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
  bound := 'msg_' || digits || repeat('0', 16);
  FOR spec IN SELECT * FROM (VALUES ('messages', 'id'), ('message_events', 'message_id'), ('message_parts', 'message_id')) AS v(t, c) LOOP
    -- An id at or past the bound (none that Ferry made: its ids carry the time they were made) waits in the default
    -- partition instead of failing the migration.
    EXECUTE format('WITH moved AS (DELETE FROM %I WHERE %I >= %L RETURNING *) INSERT INTO %I SELECT * FROM moved',
      spec.t || '_p_before', spec.c, bound, spec.t);
    -- A CHECK that proves the range lets ATTACH skip its own scan (VALIDATE reads the table once).
    EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (%I < %L) NOT VALID', spec.t || '_p_before', spec.t || '_p_before_range', spec.c, bound);
    EXECUTE format('ALTER TABLE %I VALIDATE CONSTRAINT %I', spec.t || '_p_before', spec.t || '_p_before_range');
    EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (MINVALUE) TO (%L)', spec.t, spec.t || '_p_before', bound);
    -- Its work is done: the partition bound holds the same.
    EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', spec.t || '_p_before', spec.t || '_p_before_range');
  END LOOP;
END $$;
