import { ApiError, invalidField } from '../../http/errors.js';
import { parseApnsKey, parseServiceAccount, type ApnsAuthKey, type FcmServiceAccount } from './credentials.js';
import type { PushEndpoints } from './push-app.js';

/** An app's body as the API takes it (POST creates; PATCH changes what it names, null removing a credential). */
export interface AppInput {
  name?: string;
  fcm?: { serviceAccount: unknown } | null;
  apns?: { privateKey: string; keyId: string; teamId: string; bundleId: string; environment?: string } | null;
  endpoints?: PushEndpoints;
}

/** The credentials of a body, parsed: absent (unchanged), null (removed) or the checked credential. */
export interface ParsedAppCredentials {
  fcm?: FcmServiceAccount | null;
  apns?: ApnsAuthKey | null;
}

export const ENDPOINT_NAMES = ['fcm', 'oauthToken', 'apns'] as const;
export const MAX_ENDPOINT_LENGTH = 2000;

/**
 * Checks the credentials of a body before anything is written: a malformed one is refused with its service's code and
 * the parser's message, and nothing is stored.
 */
export function parseAppCredentials(input: AppInput): ParsedAppCredentials {
  const out: ParsedAppCredentials = {};
  if (input.fcm === null) out.fcm = null;
  else if (input.fcm !== undefined) {
    const r = parseServiceAccount(input.fcm.serviceAccount);
    if (!r.ok) throw new ApiError(r.code, { message: r.message });
    out.fcm = r.value;
  }
  if (input.apns === null) out.apns = null;
  else if (input.apns !== undefined) {
    const r = parseApnsKey(input.apns);
    if (!r.ok) throw new ApiError(r.code, { message: r.message });
    out.apns = r.value;
  }
  return out;
}

/** Provider base URLs: absolute http(s) URLs without user info, query or fragment (a path is kept: relays mount one). */
export function checkEndpoints(endpoints: PushEndpoints): PushEndpoints {
  const out: PushEndpoints = {};
  for (const name of ENDPOINT_NAMES) {
    const raw = endpoints[name];
    if (raw === undefined) continue;
    const field = `endpoints.${name}`;
    let u: URL;
    try {
      u = new URL(raw);
    } catch {
      throw invalidField(field, 'must be an absolute http(s) URL');
    }
    if (u.protocol !== 'https:' && u.protocol !== 'http:') throw invalidField(field, 'must be an http(s) URL');
    if (u.username || u.password) throw invalidField(field, 'must not carry a user name or password');
    if (u.search || u.hash) throw invalidField(field, 'is a base URL: no query or fragment');
    out[name] = u.toString().replace(/\/+$/, '');
  }
  return out;
}
