-- The history tables are written only by the ledger, for rows it has just written or locked, at several rows per
-- message; their foreign keys cost a trigger and a row lock on messages for every one of those rows. Ledger rows are
-- never deleted, so the cascade had nothing to do either.
ALTER TABLE message_events DROP CONSTRAINT IF EXISTS message_events_message_id_fkey;
ALTER TABLE message_parts DROP CONSTRAINT IF EXISTS message_parts_message_id_fkey;
