-- Short links (issue 35). Links are the only mutable rows; clicks are append-only, and hourly rollups per dimension
-- answer analytics without scanning clicks. used_clicks counts the redirects that consumed one of max_clicks: on
-- embedded storage the redirect's own conditional UPDATE; with Redis the atomic counter's value, written back with
-- each click batch (the floor a lost Redis key is seeded from).
CREATE TABLE shortlink_links (
  id text PRIMARY KEY,
  account_id text NOT NULL,
  slug text NOT NULL,
  url text NOT NULL,
  title text,
  tags text[] NOT NULL DEFAULT '{}',
  external_id text,
  utm jsonb NOT NULL DEFAULT '{}',
  password_hash text,
  expires_at timestamptz,
  expired_url text,
  max_clicks integer,
  used_clicks integer NOT NULL DEFAULT 0,
  ios_url text,
  android_url text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
-- Slugs are public and case-sensitive; one namespace for every account.
CREATE UNIQUE INDEX shortlink_links_slug ON shortlink_links (slug);
CREATE UNIQUE INDEX shortlink_links_external ON shortlink_links (account_id, external_id) WHERE external_id IS NOT NULL;
CREATE INDEX shortlink_links_account ON shortlink_links (account_id, id);

-- One index only (every insert maintains it): (link_id, id) serves uniqueness, a link's clicks and the cursor.
CREATE TABLE shortlink_clicks (
  link_id text NOT NULL,
  id text NOT NULL,
  account_id text NOT NULL,
  at timestamptz NOT NULL,
  country text,
  device text NOT NULL,
  browser text,
  os text,
  referrer text,
  bot boolean NOT NULL,
  method text NOT NULL,
  outcome text NOT NULL,
  PRIMARY KEY (link_id, id)
);

-- One row per link, hour, dimension (total, country, device, browser, os, referrer), value and bot flag.
CREATE TABLE shortlink_rollups (
  link_id text NOT NULL,
  account_id text NOT NULL,
  hour timestamptz NOT NULL,
  dim text NOT NULL,
  value text NOT NULL,
  bot boolean NOT NULL,
  clicks bigint NOT NULL,
  PRIMARY KEY (link_id, hour, dim, value, bot)
);
CREATE INDEX shortlink_rollups_account ON shortlink_rollups (account_id, hour);
