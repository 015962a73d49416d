import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';

/**
 * An app's provider credentials as uploaded, checked before anything is stored: a malformed key is refused with a
 * clear code and message, never sealed away to fail at the first send.
 */

/** A Google service account (the JSON file the Firebase console downloads), reduced to what FCM HTTP v1 needs. */
export interface FcmServiceAccount {
  projectId: string;
  clientEmail: string;
  /** PKCS#8 PEM of the RSA key that signs the OAuth2 assertion (RS256). */
  privateKey: string;
  privateKeyId: string | null;
  /** Where the assertion is exchanged for an access token (the file's token_uri). */
  tokenUri: string;
}

/** An APNs auth key (.p8) with what identifies it to Apple. */
export interface ApnsAuthKey {
  /** The 10-character key id Apple shows beside the key. */
  keyId: string;
  /** The 10-character team id. */
  teamId: string;
  /** PKCS#8 PEM of the P-256 key that signs provider tokens (ES256). */
  privateKey: string;
  /** The app's bundle id: the `apns-topic` of its alerts. */
  bundleId: string;
  /** Which APNs the app's devices are registered with by default. */
  environment: 'sandbox' | 'production';
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; code: 'INVALID_FCM_CREDENTIALS' | 'INVALID_APNS_CREDENTIALS'; message: string };

const GOOGLE_TOKEN_URI = 'https://oauth2.googleapis.com/token';

function privateKeyOf(pem: string): KeyObject | null {
  try {
    return createPrivateKey({ key: pem, format: 'pem' });
  } catch {
    return null;
  }
}

/** Parses and checks a service-account JSON (text or object). */
export function parseServiceAccount(input: unknown): Parsed<FcmServiceAccount> {
  const bad = (message: string): Parsed<FcmServiceAccount> => ({ ok: false, code: 'INVALID_FCM_CREDENTIALS', message });
  let o: unknown = input;
  if (typeof input === 'string') {
    try {
      o = JSON.parse(input);
    } catch {
      return bad('the service account is not JSON');
    }
  }
  if (!o || typeof o !== 'object' || Array.isArray(o)) return bad('the service account must be the JSON object Firebase downloads');
  const sa = o as Record<string, unknown>;
  if (sa.type !== 'service_account') return bad('the service account\'s "type" must be "service_account"');
  for (const field of ['project_id', 'client_email', 'private_key'] as const) {
    if (typeof sa[field] !== 'string' || !(sa[field] as string).trim()) return bad(`the service account has no "${field}"`);
  }
  const key = privateKeyOf(sa.private_key as string);
  if (!key) return bad('the service account\'s "private_key" is not a PEM private key');
  if (key.asymmetricKeyType !== 'rsa') return bad(`the service account's "private_key" must be an RSA key (RS256), not ${key.asymmetricKeyType}`);
  const tokenUri = typeof sa.token_uri === 'string' && sa.token_uri ? sa.token_uri : GOOGLE_TOKEN_URI;
  try {
    const u = new URL(tokenUri);
    if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new Error('scheme');
  } catch {
    return bad('the service account\'s "token_uri" is not an http(s) URL');
  }
  return {
    ok: true,
    value: {
      projectId: sa.project_id as string,
      clientEmail: sa.client_email as string,
      privateKey: key.export({ format: 'pem', type: 'pkcs8' }).toString(),
      privateKeyId: typeof sa.private_key_id === 'string' ? sa.private_key_id : null,
      tokenUri,
    },
  };
}

const APPLE_ID = /^[A-Z0-9]{10}$/;
const BUNDLE_ID = /^[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$/;

/** Parses and checks an APNs auth key with its ids. */
export function parseApnsKey(input: { privateKey?: unknown; keyId?: unknown; teamId?: unknown; bundleId?: unknown; environment?: unknown }): Parsed<ApnsAuthKey> {
  const bad = (message: string): Parsed<ApnsAuthKey> => ({ ok: false, code: 'INVALID_APNS_CREDENTIALS', message });
  if (typeof input.keyId !== 'string' || !APPLE_ID.test(input.keyId)) return bad('"keyId" must be the 10-character key id Apple shows (A-Z, 0-9)');
  if (typeof input.teamId !== 'string' || !APPLE_ID.test(input.teamId)) return bad('"teamId" must be the 10-character team id (A-Z, 0-9)');
  if (typeof input.bundleId !== 'string' || !BUNDLE_ID.test(input.bundleId)) return bad('"bundleId" must be the app\'s bundle id (e.g. com.example.app)');
  const environment = input.environment ?? 'production';
  if (environment !== 'sandbox' && environment !== 'production') return bad('"environment" is sandbox or production');
  if (typeof input.privateKey !== 'string') return bad('"privateKey" must be the text of the .p8 file');
  const key = privateKeyOf(input.privateKey);
  if (!key) return bad('"privateKey" is not a PEM private key (the .p8 file\'s text, BEGIN PRIVATE KEY)');
  if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1') {
    return bad('"privateKey" must be a P-256 EC key (APNs signs provider tokens with ES256)');
  }
  return {
    ok: true,
    value: {
      keyId: input.keyId,
      teamId: input.teamId,
      bundleId: input.bundleId,
      environment,
      privateKey: key.export({ format: 'pem', type: 'pkcs8' }).toString(),
    },
  };
}

/** The public half of a PEM private key, as PEM (simulators verify signatures with it). */
export function publicKeyOf(privateKeyPem: string): string {
  return createPublicKey(createPrivateKey(privateKeyPem)).export({ format: 'pem', type: 'spki' }).toString();
}
