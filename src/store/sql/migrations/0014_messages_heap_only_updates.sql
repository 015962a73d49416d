-- A message's row is updated twice (submitted, then final). The index of open messages named status in its predicate,
-- so every update wrote a new entry into each index of messages (primary key, account/created, open) instead of
-- staying on its page as a heap-only update. The index now marks open rows by final_at, which only the final update
-- sets (final_at IS NULL exactly while the status is queued, scheduled or submitted), and each page keeps room for the
-- submit's new version: the submit record becomes a heap-only update for most rows. The final update still writes
-- index entries. Queries of open messages name both conditions (final_at IS NULL AND status ...).
-- Building the new index reads the whole table once, holding off writes to messages meanwhile.
DROP INDEX messages_open;
CREATE INDEX messages_open ON messages (id) WHERE final_at IS NULL;
ALTER TABLE messages SET (fillfactor = 60);
