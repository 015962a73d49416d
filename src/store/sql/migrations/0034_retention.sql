-- Retention (src/store/sql/retention.ts): one instance purges at a time, under a lease any instance may take once it
-- ran out (a crashed holder's too). Times are epoch milliseconds.
CREATE TABLE maintenance_leases (
  name text PRIMARY KEY,
  holder text NOT NULL,
  until_ms bigint NOT NULL
);
-- The purge deletes a webhook event's deliveries with it (and the FK's cascade needs this too), and an email send's
-- content once none of its messages is left.
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);
-- email_messages is the email module's table (src/channels/email/migrations/, 0026, applied before this one): a core
-- migration touches a product's table only where it exists, so the core's migrations apply without any product.
DO $$
BEGIN
  IF to_regclass('email_messages') IS NOT NULL THEN
    CREATE INDEX IF NOT EXISTS email_messages_send ON email_messages (send_id);
  END IF;
END $$;
