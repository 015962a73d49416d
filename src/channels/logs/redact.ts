/**
 * The redaction of request and response bodies before they are stored in the request logs: the rules of the daemon's
 * logs (src/log.ts REDACT_PATHS: authorization, cookie, password, secret, token, pin, otp, message text) applied at any
 * depth, plus any key whose name ends in secret, password or token (apiSecret, webhookSecret, accessToken). The
 * response envelope's own top-level `message` (a catalogue text, never customer content) is kept.
 */
const SECRET_KEYS = new Set(['authorization', 'cookie', 'password', 'secret', 'token', 'pin', 'otp', 'message', 'text', 'shortmessage', 'secretkey', 'admintoken', 'body', 'html']);
const SECRET_SUFFIX = /(secret|password|token|passphrase)$/i;

export const REDACTED = '[redacted]';

function isSecretKey(key: string): boolean {
  return SECRET_KEYS.has(key.toLowerCase()) || SECRET_SUFFIX.test(key);
}

/** A copy of a JSON value with every secret-named member's value replaced by [redacted]. */
export function redactValue(value: unknown, depth = 0): unknown {
  if (depth > 32) return REDACTED;
  if (Array.isArray(value)) return value.map((v) => redactValue(v, depth + 1));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) out[k] = isSecretKey(k) ? REDACTED : redactValue(v, depth + 1);
    return out;
  }
  return value;
}

/** The JSON text cut to at most `limit` bytes (on a character boundary), marked when cut. */
export function truncate(text: string, limit: number): string {
  if (Buffer.byteLength(text) <= limit) return text;
  const buf = Buffer.from(text).subarray(0, limit);
  // A cut inside a multi-byte character leaves a replacement character; drop it.
  const cut = buf.toString('utf8').replace(/\uFFFD$/, '');
  return `${cut}…[truncated, ${Buffer.byteLength(text)} bytes]`;
}

/** A request body (as parsed) for storage: redacted, serialized, truncated; null when there was none. */
export function storedRequestBody(body: unknown, limit: number): string | null {
  if (body === undefined || body === null) return null;
  if (typeof body === 'object' && Object.keys(body).length === 0 && !Array.isArray(body)) return null;
  return truncate(JSON.stringify(redactValue(body)), limit);
}

/** Responses larger than this are not parsed for redaction (their size is stored instead). */
const MAX_PARSED_RESPONSE = 1 << 20;

/**
 * A response body (as sent: a string or a buffer of JSON) for storage: parsed, redacted (the envelope's top-level
 * message kept), serialized, truncated. A body that is not JSON is never stored as is: only its size.
 */
export function storedResponseBody(payload: unknown, limit: number): string | null {
  if (payload === undefined || payload === null) return null;
  const text = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : null;
  if (text === null) return '[streamed body not kept]';
  if (text.length === 0) return null;
  if (text.length > MAX_PARSED_RESPONSE) return `[body of ${Buffer.byteLength(text)} bytes not kept]`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return `[non-JSON body of ${Buffer.byteLength(text)} bytes not kept]`;
  }
  let redacted = redactValue(parsed);
  if (parsed && typeof parsed === 'object' && !Array.isArray(parsed) && typeof (parsed as { message?: unknown }).message === 'string') {
    redacted = { ...(redacted as Record<string, unknown>), message: (parsed as { message: string }).message };
  }
  return truncate(JSON.stringify(redacted), limit);
}
