/**
 * The redaction of request and response bodies before they are stored in the request logs.
 *
 * A request body is redacted by its route's body schema: a property marked `x-ferry-redact: 'secret' | 'personal'`
 * (PINs, codes, passwords, keys, credentials, message texts, template data, attachments) is replaced by [redacted],
 * and so is every member the schema does not describe (an allow-list: a free-form object such as `metadata` keeps its
 * member names, not their values). A body under a route without a schema keeps only the known-safe member names of
 * ALLOWED_KEYS. In both, a member named like a secret (below) is redacted whatever the schema says.
 *
 * A response body (no schema marks) is redacted by name: the rules of the daemon's logs (src/log.ts REDACT_PATHS:
 * authorization, cookie, password, secret, token, pin, otp, message text) at any depth, plus any key whose name ends
 * in secret, password, token or key (apiSecret, webhookSecret, accessToken, apiKey, privateKey). The envelope's own
 * top-level `message` and `code` (catalogue texts, never customer content) are kept.
 */
const SECRET_KEYS = new Set([
  'authorization',
  'cookie',
  'password',
  'secret',
  'token',
  'pin',
  'otp',
  'code',
  'message',
  'text',
  'shortmessage',
  'secretkey',
  'admintoken',
  'body',
  'html',
  'key',
  'credentials',
  'content',
]);
const SECRET_SUFFIX = /(secret|password|token|passphrase|apikey|privatekey|credentials)$/i;

export const REDACTED = '[redacted]';

/** The schema keyword marking a body property never stored in the request logs (registered with the app's ajv). */
export const REDACT_KEYWORD = 'x-ferry-redact';

/** secret: credentials, codes, keys. personal: what the customer's users wrote or are (message texts, data). */
export type RedactMark = 'secret' | 'personal';

/** The members of a body schema redaction reads. */
export interface RedactSchema {
  type?: unknown;
  [REDACT_KEYWORD]?: RedactMark;
  properties?: Record<string, RedactSchema>;
  patternProperties?: Record<string, RedactSchema>;
  additionalProperties?: boolean | RedactSchema;
  items?: RedactSchema | readonly RedactSchema[];
  anyOf?: readonly RedactSchema[];
  oneOf?: readonly RedactSchema[];
  allOf?: readonly RedactSchema[];
}

/**
 * Member names kept in a body whose route has no schema (the MCP endpoint's JSON-RPC envelope and tool names, a
 * provider's callback): the structure and identifiers, never free text. Everything else is redacted.
 */
const ALLOWED_KEYS = new Set(['jsonrpc', 'id', 'method', 'params', 'name', 'arguments', 'type', 'status', 'messageId', 'to', 'from', 'limit', 'cursor', 'protocolVersion', 'clientInfo', 'version']);

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

/** A copy keeping only ALLOWED_KEYS members (at any depth) and the values under them; `kept`: under such a member. */
export function redactByAllowList(value: unknown, kept = false, depth = 0): unknown {
  if (depth > 32) return REDACTED;
  if (Array.isArray(value)) return value.map((v) => redactByAllowList(v, kept, depth + 1));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) out[k] = ALLOWED_KEYS.has(k) && !isSecretKey(k) ? redactByAllowList(v, true, depth + 1) : REDACTED;
    return out;
  }
  return kept ? value : REDACTED;
}

/** A schema and the alternatives it combines (anyOf, oneOf, allOf), which redaction reads as one. */
function variants(schema: RedactSchema): RedactSchema[] {
  return [schema, ...(schema.anyOf ?? []), ...(schema.oneOf ?? []), ...(schema.allOf ?? [])];
}

/** The schema of a member: its property, a matching pattern, or additionalProperties when that is a schema. */
function memberSchema(alts: RedactSchema[], key: string): RedactSchema | null {
  for (const s of alts) if (s.properties && Object.hasOwn(s.properties, key)) return s.properties[key];
  for (const s of alts) for (const [pattern, p] of Object.entries(s.patternProperties ?? {})) if (new RegExp(pattern, 'u').test(key)) return p;
  for (const s of alts) if (s.additionalProperties && typeof s.additionalProperties === 'object') return s.additionalProperties;
  return null;
}

/** A copy of a body redacted by its schema (see the top of this file); null schema: by the allow-list. */
export function redactBySchema(value: unknown, schema: RedactSchema | null | undefined, depth = 0): unknown {
  if (!schema) return depth === 0 ? redactByAllowList(value) : REDACTED;
  if (depth > 32) return REDACTED;
  const alts = variants(schema);
  if (alts.some((s) => s[REDACT_KEYWORD])) return REDACTED;
  if (Array.isArray(value)) {
    return value.map((v, i) => {
      const items = alts.find((s) => s.items)?.items;
      return redactBySchema(v, Array.isArray(items) ? items[i] : items, depth + 1);
    });
  }
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) out[k] = isSecretKey(k) ? REDACTED : redactBySchema(v, memberSchema(alts, k), depth + 1);
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

/**
 * A request body (as parsed) for storage: redacted by its route's body schema (null: the route has none),
 * serialized, truncated; null when there was none. A body not parsed as JSON (a provider's raw callback) is not kept.
 */
export function storedRequestBody(body: unknown, limit: number, schema: RedactSchema | null = null): string | null {
  if (body === undefined || body === null) return null;
  if (Buffer.isBuffer(body)) return `[body of ${body.length} bytes not kept]`;
  if (typeof body === 'object' && Object.keys(body).length === 0 && !Array.isArray(body)) return null;
  return truncate(JSON.stringify(redactBySchema(body, schema)), limit);
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
  if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) {
    // The envelope's own message and code: catalogue texts.
    const { message, code } = parsed as { message?: unknown; code?: unknown };
    if (typeof message === 'string') redacted = { ...(redacted as Record<string, unknown>), message };
    if (typeof code === 'string') redacted = { ...(redacted as Record<string, unknown>), code };
  }
  return truncate(JSON.stringify(redacted), limit);
}
