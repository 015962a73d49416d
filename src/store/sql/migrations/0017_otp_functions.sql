-- The SQL OTP store's create, verify and resend as functions: each is one statement, its own transaction, instead of
-- a transaction of two to four statements driven from the daemon. The steps and locks are those the store ran
-- itself: creates for one (account, phone) queue on its otp_phones row, verify and resend lock the OTP row. Each
-- statement inside a (volatile) function reads with a snapshot of its own, so on Postgres the check after a lock
-- sees what the transaction that held it committed, as the separate statements did.
-- Embedded, where every statement is a call into the database and a sync of its files, an OTP pair took ten such
-- calls and now takes two.

-- Outcome OK, ACTIVE (retry_after: until the active one expires; active_id) or RATE (retry_after: until the oldest
-- counted create leaves the window). Refused creates are not counted. A reused id fails the statement (primary key).
CREATE FUNCTION ferry_otp_create(
  p_id text, p_account_id text, p_phone text, p_code_cipher text, p_code_hash text, p_created_at bigint,
  p_expires_at bigint, p_last_sent_at bigint, p_max_attempts integer, p_attempts_left integer, p_meta text,
  p_retain_until bigint, p_now bigint, p_rate_limit integer, p_rate_window bigint)
RETURNS TABLE (outcome text, retry_after bigint, active_id text)
LANGUAGE plpgsql AS $$
DECLARE
  v_hits bigint[];
  v_kept bigint[];
  v_active_id text;
  v_active_expires bigint;
BEGIN
  -- Upsert-as-lock: the no-op update takes the row lock even when the row already exists.
  INSERT INTO otp_phones AS p (account_id, phone) VALUES (p_account_id, p_phone)
    ON CONFLICT (account_id, phone) DO UPDATE SET account_id = EXCLUDED.account_id
    RETURNING p.hits INTO v_hits;
  SELECT c.id, c.expires_at INTO v_active_id, v_active_expires FROM otp_codes c
    WHERE c.account_id = p_account_id AND c.phone = p_phone AND c.expires_at > p_now AND c.attempts_left > 0
    ORDER BY c.expires_at DESC LIMIT 1;
  IF v_active_id IS NOT NULL THEN
    RETURN QUERY SELECT 'ACTIVE'::text, v_active_expires - p_now, v_active_id;
    RETURN;
  END IF;
  v_kept := ARRAY(SELECT h FROM unnest(v_hits) WITH ORDINALITY AS x(h, n) WHERE h > p_now - p_rate_window ORDER BY n);
  IF cardinality(v_kept) >= p_rate_limit THEN
    RETURN QUERY SELECT 'RATE'::text, greatest(1, (SELECT min(h) FROM unnest(v_kept) AS h) + p_rate_window - p_now), NULL::text;
    RETURN;
  END IF;
  UPDATE otp_phones SET hits = v_kept || p_now, idle_after = p_now + p_rate_window
    WHERE account_id = p_account_id AND phone = p_phone;
  INSERT INTO otp_codes (id, account_id, phone, code_cipher, code_hash, created_at, expires_at, last_sent_at,
      max_attempts, attempts_left, meta, retain_until)
    VALUES (p_id, p_account_id, p_phone, p_code_cipher, p_code_hash, p_created_at, p_expires_at, p_last_sent_at,
      p_max_attempts, p_attempts_left, p_meta, p_retain_until);
  RETURN QUERY SELECT 'OK'::text, NULL::bigint, NULL::text;
END
$$;

-- The account's OTP, locked; one past its retention is deleted and reads as missing, as does another account's
-- (neither locked nor touched).
CREATE FUNCTION ferry_otp_lock_live(p_account_id text, p_id text, p_now bigint)
RETURNS otp_codes
LANGUAGE plpgsql AS $$
DECLARE
  r otp_codes;
BEGIN
  SELECT * INTO r FROM otp_codes c WHERE c.id = p_id AND c.account_id = p_account_id FOR UPDATE;
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;
  IF p_now >= r.retain_until THEN
    DELETE FROM otp_codes c WHERE c.id = p_id;
    RETURN NULL;
  END IF;
  RETURN r;
END
$$;

-- Outcome verified (the row, now deleted), invalid or locked (the row with its attempts left), expired or not_found
-- (no row). The last wrong attempt locks; a locked OTP stays locked, even for the right code.
CREATE FUNCTION ferry_otp_verify(p_account_id text, p_id text, p_code_hash text, p_now bigint)
RETURNS TABLE (outcome text, otp otp_codes)
LANGUAGE plpgsql AS $$
DECLARE
  r otp_codes;
BEGIN
  r := ferry_otp_lock_live(p_account_id, p_id, p_now);
  IF r.id IS NULL THEN
    RETURN QUERY SELECT 'not_found'::text, NULL::otp_codes;
  ELSIF r.attempts_left <= 0 THEN
    RETURN QUERY SELECT 'locked'::text, r;
  ELSIF p_now >= r.expires_at THEN
    RETURN QUERY SELECT 'expired'::text, NULL::otp_codes;
  ELSIF r.code_hash = p_code_hash THEN
    DELETE FROM otp_codes c WHERE c.id = p_id;
    RETURN QUERY SELECT 'verified'::text, r;
  ELSE
    r.attempts_left := r.attempts_left - 1;
    UPDATE otp_codes c SET attempts_left = r.attempts_left WHERE c.id = p_id;
    RETURN QUERY SELECT CASE WHEN r.attempts_left = 0 THEN 'locked' ELSE 'invalid' END, r;
  END IF;
END
$$;

-- Outcome ok (the row with its new last send), cooldown (retry_after), locked, expired or not_found.
CREATE FUNCTION ferry_otp_resend(p_account_id text, p_id text, p_cooldown bigint, p_now bigint)
RETURNS TABLE (outcome text, retry_after bigint, otp otp_codes)
LANGUAGE plpgsql AS $$
DECLARE
  r otp_codes;
BEGIN
  r := ferry_otp_lock_live(p_account_id, p_id, p_now);
  IF r.id IS NULL THEN
    RETURN QUERY SELECT 'not_found'::text, NULL::bigint, NULL::otp_codes;
  ELSIF r.attempts_left <= 0 THEN
    RETURN QUERY SELECT 'locked'::text, NULL::bigint, NULL::otp_codes;
  ELSIF p_now >= r.expires_at THEN
    RETURN QUERY SELECT 'expired'::text, NULL::bigint, NULL::otp_codes;
  ELSIF r.last_sent_at + p_cooldown - p_now > 0 THEN
    RETURN QUERY SELECT 'cooldown'::text, r.last_sent_at + p_cooldown - p_now, NULL::otp_codes;
  ELSE
    r.last_sent_at := p_now;
    UPDATE otp_codes c SET last_sent_at = p_now WHERE c.id = p_id;
    RETURN QUERY SELECT 'ok'::text, NULL::bigint, r;
  END IF;
END
$$;
