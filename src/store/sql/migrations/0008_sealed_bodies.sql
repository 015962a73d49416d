-- Message text that must not be readable at rest (OTP codes): AES-256-GCM ciphertext, decrypted only to send.
-- body then holds a masked copy for display (status API, `ferry messages show`).
ALTER TABLE messages ADD COLUMN body_sealed text;
-- The USSD fallback looks pending codes up by phone across accounts.
CREATE INDEX otp_codes_by_phone ON otp_codes (phone, expires_at);
