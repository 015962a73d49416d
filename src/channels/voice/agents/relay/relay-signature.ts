import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * How a customer's relay server knows a connection is Ferry's: the upgrade request carries `X-Ferry-Timestamp` (Unix
 * seconds) and `X-Ferry-Signature: v1,<base64 HMAC-SHA256(key, "<timestamp>.<url>")>`, the key being the base64 after
 * `whsec_` of the account's signing secret, exactly as webhooks and status callbacks derive it. Several secrets (a
 * rotation) give several signatures, space-separated; any one matching is enough.
 */
export const RELAY_SIGNATURE_HEADER = 'x-ferry-signature';
export const RELAY_TIMESTAMP_HEADER = 'x-ferry-timestamp';
/** A signature older or newer than this is refused (a captured handshake cannot be replayed later). */
export const RELAY_SIGNATURE_TOLERANCE_SECONDS = 300;

const PREFIX = 'whsec_';

function keyOf(secret: string): Buffer {
  return Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64');
}

/** The URL as signed: normalised as WHATWG URL parsing does (wss://h.example.com → wss://h.example.com/). */
export function signedUrlOf(url: string | URL): string {
  return new URL(url).href;
}

export function relaySignature(secrets: readonly string[], timestamp: number, url: string | URL): string {
  const payload = `${timestamp}.${signedUrlOf(url)}`;
  return secrets.map((s) => 'v1,' + createHmac('sha256', keyOf(s)).update(payload).digest('base64')).join(' ');
}

export type RelaySignatureCheck = { ok: true } | { ok: false; reason: string };

/** Checks the two headers of an upgrade request against the URL it was made to (what a customer's server does). */
export function verifyRelaySignature(o: {
  secrets: readonly string[];
  signature: string | undefined;
  timestamp: string | undefined;
  url: string | URL;
  /** Unix seconds now (default the clock). */
  now?: number;
  toleranceSeconds?: number;
}): RelaySignatureCheck {
  if (!o.signature) return { ok: false, reason: 'no X-Ferry-Signature header' };
  if (!o.timestamp || !/^[0-9]{1,12}$/.test(o.timestamp)) return { ok: false, reason: 'no valid X-Ferry-Timestamp header' };
  const timestamp = Number(o.timestamp);
  const now = o.now ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - timestamp) > (o.toleranceSeconds ?? RELAY_SIGNATURE_TOLERANCE_SECONDS)) return { ok: false, reason: 'the timestamp is too old or too new' };
  const expected = relaySignature(o.secrets, timestamp, o.url)
    .split(' ')
    .map((s) => Buffer.from(s));
  for (const given of o.signature.split(' ')) {
    const g = Buffer.from(given);
    if (expected.some((e) => e.length === g.length && timingSafeEqual(e, g))) return { ok: true };
  }
  return { ok: false, reason: 'the signature does not match' };
}
