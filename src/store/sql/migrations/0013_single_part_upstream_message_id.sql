-- A message sent in one part keeps its upstream message id on its own row; only messages Ferry split get rows in
-- message_parts. The submit record writes the row anyway, so the id costs no extra statement, while a parts row per
-- message had been one more insert into a table and its primary key for nearly every message (most are one part).
-- Rows written before this migration keep their parts rows and read as before.
ALTER TABLE messages ADD COLUMN upstream_message_id text;
