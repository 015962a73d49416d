-- Every receipt wrote an entry into an index on smpp_outbox.created_at that served only the purge of rows past the
-- retention, once a minute; each vacuum of the outbox (every few seconds under load) also had to clean it. The purge
-- now reads the table instead, as the scrape's count of waiting rows already does: it is small while binds take their
-- deliveries, and a purge finding nothing old costs one pass over it a minute.
DROP INDEX smpp_outbox_created;
