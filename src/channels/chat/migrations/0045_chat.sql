-- In-app chat (issue 46). Users, channels and messages are an account's (account_id leads every key); a message is
-- stored with its channel's next sequence number before anything is emitted, so a client that reconnects asks for
-- what came after its last seq. Signing keys are not stored: a token's key is derived from the daemon's key, the
-- account and the generation kept here (rotation moves the generation and keeps the previous one for a grace).
CREATE TABLE chat_token_keys (
  account_id text PRIMARY KEY,
  generation integer NOT NULL DEFAULT 1,
  previous_generation integer,
  previous_valid_until timestamptz,
  rotated_at timestamptz
);

CREATE TABLE chat_users (
  account_id text NOT NULL,
  id text NOT NULL,
  name text,
  image text,
  data jsonb NOT NULL DEFAULT '{}',
  banned_at timestamptz,
  -- Tokens issued before this (a whole second: a JWT's iat) are refused: revoke-tokens sets it.
  tokens_valid_after timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (account_id, id)
);

CREATE TABLE chat_channels (
  account_id text NOT NULL,
  id text NOT NULL,
  type text NOT NULL CHECK (type IN ('messaging', 'livechat')),
  name text,
  data jsonb NOT NULL DEFAULT '{}',
  created_by text,
  last_seq bigint NOT NULL DEFAULT 0,
  last_message_at timestamptz,
  member_count integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (account_id, id)
);
CREATE INDEX chat_channels_recent ON chat_channels (account_id, last_message_at DESC NULLS LAST, id);

CREATE TABLE chat_members (
  account_id text NOT NULL,
  channel_id text NOT NULL,
  user_id text NOT NULL,
  role text NOT NULL DEFAULT 'member' CHECK (role IN ('owner', 'member')),
  muted boolean NOT NULL DEFAULT false,
  last_read_seq bigint NOT NULL DEFAULT 0,
  joined_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (account_id, channel_id, user_id),
  FOREIGN KEY (account_id, channel_id) REFERENCES chat_channels (account_id, id) ON DELETE CASCADE
);
-- A user's channels (GET /channels?member=, a socket's rooms at connect).
CREATE INDEX chat_members_user ON chat_members (account_id, user_id, channel_id);

CREATE TABLE chat_messages (
  account_id text NOT NULL,
  channel_id text NOT NULL,
  seq bigint NOT NULL,
  id text NOT NULL UNIQUE,
  user_id text,
  type text NOT NULL DEFAULT 'regular' CHECK (type IN ('regular', 'system')),
  text text NOT NULL DEFAULT '',
  attachments jsonb NOT NULL DEFAULT '[]',
  data jsonb NOT NULL DEFAULT '{}',
  client_msg_id text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  deleted_at timestamptz,
  PRIMARY KEY (account_id, channel_id, seq),
  FOREIGN KEY (account_id, channel_id) REFERENCES chat_channels (account_id, id) ON DELETE CASCADE
);
-- A retried send with the same clientMsgId finds its message (one per sender and client id). The system (user_id
-- NULL) is the sender '' here: NULLs would never conflict, and two racing system sends would both be stored.
CREATE UNIQUE INDEX chat_messages_client ON chat_messages (account_id, (COALESCE(user_id, '')), client_msg_id) WHERE client_msg_id IS NOT NULL;
