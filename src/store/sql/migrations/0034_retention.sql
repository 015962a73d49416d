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
CREATE INDEX email_messages_send ON email_messages (send_id);
