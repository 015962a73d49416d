import { createHash, randomBytes } from 'node:crypto';
import { parseAuthParams, quote } from './auth-params.js';
import { SipParseError } from './errors.js';

/** RFC 7616 / RFC 8760 algorithms. */
export type DigestAlgorithm = 'MD5' | 'MD5-sess' | 'SHA-256' | 'SHA-256-sess';

export interface DigestChallenge {
  realm: string;
  nonce: string;
  opaque?: string;
  algorithm: DigestAlgorithm;
  /** qop options offered (e.g. ['auth']); empty for an RFC 2069 style challenge. */
  qop: string[];
  stale: boolean;
}

export interface DigestCredentials {
  username: string;
  password: string;
}

/** What an Authorization / Proxy-Authorization header carries. */
export interface DigestAuthorization {
  username: string;
  realm: string;
  nonce: string;
  uri: string;
  response: string;
  algorithm: DigestAlgorithm;
  qop?: string;
  nc?: string;
  cnonce?: string;
  opaque?: string;
}

const ALGORITHMS: Record<string, DigestAlgorithm> = {
  'md5': 'MD5', 'md5-sess': 'MD5-sess', 'sha-256': 'SHA-256', 'sha-256-sess': 'SHA-256-sess',
};

function algorithmOf(value: string | undefined): DigestAlgorithm {
  if (value === undefined) return 'MD5';
  const a = ALGORITHMS[value.toLowerCase()];
  if (a === undefined) throw new SipParseError(`unsupported digest algorithm ${value}`);
  return a;
}

/** Parses a WWW-Authenticate / Proxy-Authenticate value; throws SipParseError unless it is a usable Digest one. */
export function parseChallenge(header: string): DigestChallenge {
  const { scheme, params } = parseAuthParams(header);
  if (scheme.toLowerCase() !== 'digest') throw new SipParseError(`unsupported auth scheme ${scheme}`);
  if (params.realm === undefined || params.nonce === undefined) throw new SipParseError('challenge without realm or nonce');
  const challenge: DigestChallenge = {
    realm: params.realm,
    nonce: params.nonce,
    algorithm: algorithmOf(params.algorithm),
    qop: params.qop === undefined ? [] : params.qop.split(',').map((q) => q.trim().toLowerCase()).filter((q) => q !== ''),
    stale: params.stale?.toLowerCase() === 'true',
  };
  if (params.opaque !== undefined) challenge.opaque = params.opaque;
  return challenge;
}

export function parseAuthorization(header: string): DigestAuthorization {
  const { scheme, params } = parseAuthParams(header);
  if (scheme.toLowerCase() !== 'digest') throw new SipParseError(`unsupported auth scheme ${scheme}`);
  for (const name of ['username', 'realm', 'nonce', 'uri', 'response']) {
    if (params[name] === undefined) throw new SipParseError(`authorization without ${name}`);
  }
  const auth: DigestAuthorization = {
    username: params.username, realm: params.realm, nonce: params.nonce, uri: params.uri, response: params.response,
    algorithm: algorithmOf(params.algorithm),
  };
  if (params.qop !== undefined) auth.qop = params.qop.toLowerCase();
  if (params.nc !== undefined) auth.nc = params.nc;
  if (params.cnonce !== undefined) auth.cnonce = params.cnonce;
  if (params.opaque !== undefined) auth.opaque = params.opaque;
  return auth;
}

export interface DigestInput {
  algorithm: DigestAlgorithm;
  username: string;
  password: string;
  realm: string;
  nonce: string;
  method: string;
  uri: string;
  qop?: string;
  nc?: string;
  cnonce?: string;
}

function hasher(algorithm: DigestAlgorithm): (s: string) => string {
  const name = algorithm.startsWith('SHA-256') ? 'sha256' : 'md5';
  return (s) => createHash(name).update(s, 'utf8').digest('hex');
}

/** The request-digest of RFC 2617 3.2.2.1 / RFC 7616 3.4.1 (qop=auth or none; auth-int is not offered). */
export function digestResponse(d: DigestInput): string {
  const H = hasher(d.algorithm);
  let ha1 = H(`${d.username}:${d.realm}:${d.password}`);
  if (d.algorithm.endsWith('-sess')) ha1 = H(`${ha1}:${d.nonce}:${d.cnonce ?? ''}`);
  const ha2 = H(`${d.method}:${d.uri}`);
  return d.qop ? H(`${ha1}:${d.nonce}:${d.nc}:${d.cnonce}:${d.qop}:${ha2}`) : H(`${ha1}:${d.nonce}:${ha2}`);
}

export interface AuthorizeOptions {
  challenge: DigestChallenge;
  credentials: DigestCredentials;
  method: string;
  uri: string;
  /** Defaults to 16 random hex octets. */
  cnonce?: string;
  /** Nonce count for this nonce, default 1. */
  nc?: number;
}

/** Builds the Authorization / Proxy-Authorization value answering a challenge. */
export function buildAuthorization(o: AuthorizeOptions): string {
  const c = o.challenge;
  const qop = c.qop.includes('auth') ? 'auth' : undefined;
  const needsCnonce = qop !== undefined || c.algorithm.endsWith('-sess');
  const cnonce = needsCnonce ? (o.cnonce ?? randomBytes(8).toString('hex')) : undefined;
  const nc = qop ? (o.nc ?? 1).toString(16).padStart(8, '0') : undefined;
  const response = digestResponse({
    algorithm: c.algorithm, username: o.credentials.username, password: o.credentials.password, realm: c.realm,
    nonce: c.nonce, method: o.method, uri: o.uri, qop, nc, cnonce,
  });
  let out = `Digest username=${quote(o.credentials.username)}, realm=${quote(c.realm)}, nonce=${quote(c.nonce)}, uri=${quote(o.uri)}, response=${quote(response)}, algorithm=${c.algorithm}`;
  if (cnonce !== undefined) out += `, cnonce=${quote(cnonce)}`;
  if (qop) out += `, qop=${qop}, nc=${nc}`;
  if (c.opaque !== undefined) out += `, opaque=${quote(c.opaque)}`;
  return out;
}
