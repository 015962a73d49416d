-- message_events is append-only (the ledger never updates or deletes a row) and is read only by message, in id order,
-- through message_events_message (message_id, id). Its primary key on id alone served no read, yet every event, three
-- or more per message, wrote an entry into it. Ids stay unique: only the column's sequence assigns them. Dropping the
-- key drops its index at once; nothing is rebuilt.
ALTER TABLE message_events DROP CONSTRAINT message_events_pkey;
