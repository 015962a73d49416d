import { BlockList, isIP } from 'node:net';
import { GuardedHttp, GuardedHttpError, GuardedResolver, type GuardedHttpOptions, type Lookup } from './guarded-http.js';

/** An address the guard checked (absent when a name did not resolve on a developer's machine, see TargetGuard.check). */
export interface PinnedAddress {
  address: string;
  family: number;
}

export type TargetCheck = { ok: true; url: URL; pinned?: PinnedAddress } | { ok: false; reason: string };

/** `webhooks.allowPrivateTargets` as configured: yes, no, or decided from where the API listens. */
export type PrivateTargetsSetting = boolean | 'auto';

/**
 * Whether private and loopback targets of customer URLs (webhooks, USSD apps, media links) (and plain http) are allowed. `auto` allows them only on a
 * developer's machine: the embedded database, the API on a loopback address, no proxy in front (trustProxy off, no
 * publicUrl). Anything that looks deployed keeps the SSRF guard unless the operator turns it off by name.
 */
export function privateTargetsAllowed(
  setting: PrivateTargetsSetting,
  where: { httpHost: string; embeddedDatabase: boolean; trustProxy: boolean; publicUrl: string | null },
): { allowed: boolean; reason: string } {
  if (setting === true) return { allowed: true, reason: 'webhooks.allowPrivateTargets is true' };
  if (setting === false) return { allowed: false, reason: 'webhooks.allowPrivateTargets is false' };
  const host = where.httpHost.replace(/^\[|\]$/g, '');
  const loopback = host === 'localhost' || (isIP(host) !== 0 && (BLOCKED_LOOPBACK.check(host, isIP(host) === 6 ? 'ipv6' : 'ipv4')));
  if (!loopback) return { allowed: false, reason: `the API listens on ${where.httpHost}, not loopback only` };
  if (!where.embeddedDatabase) return { allowed: false, reason: 'a database server is configured (a deployment, not a developer machine)' };
  if (where.trustProxy || where.publicUrl) return { allowed: false, reason: 'the API is published through a proxy (http.trustProxy or http.publicUrl)' };
  return { allowed: true, reason: 'the API listens on loopback only with the embedded database' };
}

const BLOCKED_LOOPBACK = new BlockList();
BLOCKED_LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
BLOCKED_LOOPBACK.addAddress('::1', 'ipv6');

const CACHE_MS = 5000;

/**
 * The SSRF policy for URLs a customer gives (webhooks.allowPrivateTargets, decided by privateTargetsAllowed) over the
 * core guarded client; one instance per daemon, given to every module as `ctx.http`: https only and public addresses only,
 * unless the operator allows private targets, and never link-local (cloud metadata) or reserved addresses even then.
 * Every address a name resolves to is checked, at most every 5 s per name (on create and on sends), so a name that later
 * points inside the network is refused within seconds; requests go through client(), which connects only to checked
 * addresses (DNS rebinding cannot lead them elsewhere) and shares this guard's name cache.
 */
export class TargetGuard {
  readonly resolver: GuardedResolver;

  constructor(
    private readonly allowPrivate: boolean,
    lookup?: Lookup,
    cacheMs = CACHE_MS,
    clock: () => number = Date.now,
  ) {
    this.resolver = new GuardedResolver({ allowPrivateTargets: allowPrivate, httpsOnly: !allowPrivate }, { lookup, cacheMs, clock });
  }

  /** Whether a URL is accepted (on create, upload, and before each request for its error message). */
  async check(raw: string): Promise<TargetCheck> {
    try {
      const { url, addresses } = await this.resolver.resolve(raw);
      return { ok: true, url, pinned: addresses[0] };
    } catch (err) {
      if (!(err instanceof GuardedHttpError)) throw err;
      // On a developer's machine a name that does not resolve yet is accepted, as before: each request resolves and
      // checks it again, and refuses it then.
      if (err.kind === 'DNS_FAILED' && this.allowPrivate) return { ok: true, url: new URL(raw) };
      return { ok: false, reason: err.message };
    }
  }

  /** An HTTP client under this policy (its own agents; this guard's name cache). */
  client(o: Omit<GuardedHttpOptions, 'resolver'> = {}): GuardedHttp {
    return new GuardedHttp({ ...o, resolver: this.resolver });
  }
}
