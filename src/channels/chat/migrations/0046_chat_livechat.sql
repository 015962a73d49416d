-- Live chat (issue 46, src/channels/chat/livechat): inboxes a website embeds with their public widget key, the
-- conversations of their visitors (each a chat channel of type livechat whose members are the visitor and the agents
-- who opened it) and the sessions of the /inbox page. Identity secrets are not stored: one is derived from the
-- daemon's key, the inbox and identity_generation (rotation moves the generation).
CREATE TABLE chat_livechat_inboxes (
  account_id text NOT NULL,
  id text NOT NULL,
  name text NOT NULL,
  -- Public (it is in the customer's page): names the inbox to the widget, grants nothing else.
  widget_key text NOT NULL UNIQUE,
  require_identity boolean NOT NULL DEFAULT false,
  -- {name: {required}, email: {required}}; NULL: no form.
  pre_chat_form jsonb,
  -- {timezone, days: {mon: [['09:00', '17:00']], ...}}; NULL: always open.
  business_hours jsonb,
  offline_mode text NOT NULL DEFAULT 'form' CHECK (offline_mode IN ('form', 'hide')),
  greeting text,
  identity_generation integer NOT NULL DEFAULT 1,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (account_id, id)
);

CREATE TABLE chat_livechat_conversations (
  account_id text NOT NULL,
  channel_id text NOT NULL,
  inbox_id text NOT NULL,
  -- The visitor's chat user id.
  visitor_id text NOT NULL,
  status text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'pending', 'resolved')),
  -- The agent's chat user id (agent:<keyId>); NULL: unassigned.
  assignee text,
  -- What the visitor or the customer's page told: name, email, page, user agent; shown to agents.
  visitor jsonb NOT NULL DEFAULT '{}',
  identified boolean NOT NULL DEFAULT false,
  last_visitor_message_at timestamptz,
  resolved_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (account_id, channel_id),
  FOREIGN KEY (account_id, inbox_id) REFERENCES chat_livechat_inboxes (account_id, id) ON DELETE CASCADE,
  -- Deleting the channel (server API) ends the conversation with it.
  FOREIGN KEY (account_id, channel_id) REFERENCES chat_channels (account_id, id) ON DELETE CASCADE
);
-- One conversation per visitor and inbox: a returning visitor continues it (a resolved one reopens).
CREATE UNIQUE INDEX chat_livechat_conversations_visitor ON chat_livechat_conversations (account_id, inbox_id, visitor_id);
-- The inbox page's lists: by status, most recently active first.
CREATE INDEX chat_livechat_conversations_status ON chat_livechat_conversations (account_id, status, updated_at DESC);

-- Sessions of the /inbox page, in SQL so any instance serves them: only a SHA-256 of the cookie's token is stored,
-- never the API key that opened it (its id only). Times are epoch ms.
CREATE TABLE chat_livechat_sessions (
  token_hash text PRIMARY KEY,
  account_id text NOT NULL,
  key_id text NOT NULL,
  agent_name text,
  created_at bigint NOT NULL,
  expires_at bigint NOT NULL
);
CREATE INDEX chat_livechat_sessions_expiry ON chat_livechat_sessions (expires_at);
