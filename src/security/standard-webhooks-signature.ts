import { createHmac, randomBytes } from 'node:crypto';

const PREFIX = 'whsec_';

/** A new signing secret in the Standard Webhooks form: whsec_ + base64 of 24 random bytes (the HMAC key). */
export function newSigningSecret(): string {
  return PREFIX + randomBytes(24).toString('base64');
}

function keyOf(secret: string): Buffer {
  return Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64');
}

/** `v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<body>")>` for each secret, space-separated (rotation overlap). */
export function signatureHeader(secrets: readonly string[], id: string, timestamp: number, body: string): string {
  return secrets.map((s) => 'v1,' + createHmac('sha256', keyOf(s)).update(`${id}.${timestamp}.${body}`).digest('base64')).join(' ');
}
