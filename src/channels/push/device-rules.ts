import { invalidField } from '../../http/errors.js';
import type { PushPlatform } from './providers/types.js';

/**
 * The shape rules of what a device registration carries, checked before anything is written. Loose where the services
 * are (FCM tokens have no published grammar), strict where they are not (an APNs token is 32 bytes in hex).
 */
export const MAX_TOKEN_LENGTH = 4096;
const APNS_TOKEN = /^[0-9a-f]{64}$/i;
// Printable ASCII without spaces: what FCM and web push tokens are made of; a pasted line break or quote is refused.
const TOKEN_CHARS = /^[\x21-\x7e]+$/;
const LOCALE = /^[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{1,8})*$/;
/**
 * FCM's topic name characters (`[a-zA-Z0-9-_.~%]+`), so a name means the same on every service. At most 200: the name
 * travels in the URL path, whose parameters the API routes up to 200 characters (FCM itself allows 900).
 */
export const TOPIC_NAME_PATTERN = '^[A-Za-z0-9_.~%-]{1,200}$';
export const TOPIC_NAME = new RegExp(TOPIC_NAME_PATTERN);
export const TOPIC_NAME_RULE = '1-200 characters of A-Z a-z 0-9 - _ . ~ %';

/** The token as stored (APNs tokens in lower case, so one device is one row whatever case the app sends). */
export function checkedToken(token: string, platform: PushPlatform): string {
  const t = token.trim();
  if (!t) throw invalidField('token', 'must not be empty');
  if (t.length > MAX_TOKEN_LENGTH) throw invalidField('token', `must be at most ${MAX_TOKEN_LENGTH} characters`);
  if (platform === 'ios') {
    if (!APNS_TOKEN.test(t)) throw invalidField('token', 'an iOS (APNs) device token is 64 hexadecimal characters');
    return t.toLowerCase();
  }
  if (!TOKEN_CHARS.test(t)) throw invalidField('token', 'must be printable characters without spaces');
  return t;
}

export function checkLocale(locale: string | null | undefined): void {
  if (locale != null && !LOCALE.test(locale)) throw invalidField('locale', 'must be a language tag such as en, pt-BR or zh_Hant_TW');
}

/** An IANA time zone the runtime knows (Europe/Paris, America/Sao_Paulo, UTC). */
export function checkTimezone(timezone: string | null | undefined): void {
  if (timezone == null) return;
  try {
    new Intl.DateTimeFormat('en', { timeZone: timezone });
  } catch {
    throw invalidField('timezone', 'must be an IANA time zone such as Europe/Paris');
  }
}

/** Only iOS tokens belong to an APNs environment. */
export function checkEnvironment(platform: PushPlatform, environment: string | null | undefined): void {
  if (environment != null && platform !== 'ios') throw invalidField('environment', 'applies to ios devices only (the APNs environment of their token)');
}

export function checkTopicName(name: string): void {
  if (!TOPIC_NAME.test(name)) throw invalidField('name', `a topic name is ${TOPIC_NAME_RULE}`);
}
