import { createHmac, timingSafeEqual } from 'node:crypto';

/** X-Hub-Signature-256: `sha256=` + hex HMAC-SHA256 of the raw body with the app secret; compared in constant time. */
export function verifyHubSignature(appSecret: string, raw: Buffer, header: string | string[] | undefined): boolean {
  if (typeof header !== 'string' || !header.startsWith('sha256=')) return false;
  const given = Buffer.from(header.slice(7), 'hex');
  const expected = createHmac('sha256', appSecret).update(raw).digest();
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** hub.verify_token compared in constant time. */
export function sameToken(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
