-- The wrong pin that uses the last attempt answers invalid with 0 attempts left, as spec §3.1 tells clients to expect
-- (they lock their flow at 0); only verifies after it answer locked. The OTP is locked by that pin all the same: the
-- right pin after it does not verify, and the phone may request a new OTP at once. Same outcomes as otp-verify.lua.
CREATE OR REPLACE FUNCTION ferry_otp_verify(p_account_id text, p_id text, p_code_hash text, p_now bigint)
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
    RETURN QUERY SELECT 'invalid'::text, r;
  END IF;
END
$$;
