-- Offline pushes still to be evaluated (issue 46): one row per message that may push (not skipPush, a channel of more
-- than one member), inserted in the message's transaction. The process that stored the message evaluates it right
-- after the commit (presence, collapse, push) and deletes the row; a row still here when due (the process crashed, or
-- its queue was full) is claimed by the chat.push-outbox job, which moves due_at past its lease while it works, so a
-- crashed claimer's rows come back by themselves. No foreign key: a message gone with its channel is judged not needed.
CREATE TABLE chat_push_outbox (
  message_id text PRIMARY KEY,
  due_at timestamptz NOT NULL
);
CREATE INDEX chat_push_outbox_due ON chat_push_outbox (due_at);
