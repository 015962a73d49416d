-- Retention (src/store/sql/retention.ts) selects each batch by a table's age column among its final rows; without an
-- index on that column every batch, and the last one of every pass, read the whole table. Each index covers only the
-- rows retention may purge (the partial predicate is the declaration's finishedWhere), so live rows pay nothing.
-- Building them reads each table once, holding off its writes meanwhile: on a large database run `ferry migrate` in a
-- quiet hour. Declared tables: src/store/sql/core-tables.ts and each product's storage.ts; the check is
-- test/store/retention-indexes.test.ts.
CREATE INDEX IF NOT EXISTS outbound_jobs_done ON outbound_jobs (updated_at) WHERE NOT pending;
CREATE INDEX IF NOT EXISTS webhook_events_fanned ON webhook_events (created_at) WHERE fanned_out;
-- messages needs none: its ids are time-ordered, so the purge walks the primary key (core-tables.ts, keyTimeOrdered),
-- and an index naming final_at would write one more entry at every final update (0014).
-- The products' tables (their modules' migrations, all numbered before this one): a core migration touches a
-- product's table only where it exists, so the core's migrations apply without any product.
DO $$
BEGIN
  IF to_regclass('messenger_messages') IS NOT NULL THEN
    CREATE INDEX IF NOT EXISTS messenger_messages_done ON messenger_messages (updated_at) WHERE status <> 'queued';
    CREATE INDEX IF NOT EXISTS messenger_inbound_received ON messenger_inbound (received_at);
  END IF;
  IF to_regclass('email_messages') IS NOT NULL THEN
    CREATE INDEX IF NOT EXISTS email_messages_done ON email_messages (updated_at) WHERE status NOT IN ('queued', 'scheduled');
    CREATE INDEX IF NOT EXISTS email_sends_created ON email_sends (created_at);
  END IF;
  IF to_regclass('ussd_sessions') IS NOT NULL THEN
    CREATE INDEX IF NOT EXISTS ussd_sessions_ended ON ussd_sessions (updated_at) WHERE status <> 'active';
  END IF;
  IF to_regclass('shortlink_clicks') IS NOT NULL THEN
    CREATE INDEX IF NOT EXISTS shortlink_clicks_at ON shortlink_clicks (at);
    CREATE INDEX IF NOT EXISTS shortlink_rollups_hour ON shortlink_rollups (hour);
  END IF;
END $$;
