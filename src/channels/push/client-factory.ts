import type { LookupFunction } from 'node:net';
import type { TargetGuard } from '../../security/target-guard.js';
import type { ApnsAuthKey, FcmServiceAccount } from './credentials.js';
import type { ClientFactory, ClientSpec } from './provider-clients.js';
import { ApnsClient } from './providers/apns.js';
import { FcmClient } from './providers/fcm.js';
import type { PushSimulators } from './simulators.js';

/** A URL the SSRF guard refused: the batch fails with PUSH_ENDPOINT_REFUSED, nothing is sent there. */
export class EndpointRefused extends Error {
  override readonly name = 'EndpointRefused';
}

const GOOGLE_TOKEN_URI = 'https://oauth2.googleapis.com/token';

/**
 * Builds an app's client of one service. An app that names no endpoints talks to the embedded simulators when they run
 * (with its own credentials, made known to them, or theirs when it has none), else to Google and Apple. Every URL a
 * customer gave (the app's endpoints, a service account's token_uri other than Google's) goes through the SSRF guard,
 * and the client connects only to the address the guard checked.
 */
export function clientFactory(o: { simulators: PushSimulators | null; guard: TargetGuard; concurrency: number; ca: () => string | undefined }): ClientFactory {
  const pinned = async (raw: string | undefined, field: string): Promise<LookupFunction | undefined> => {
    if (!raw) return undefined;
    const check = await o.guard.check(raw);
    if (!check.ok) throw new EndpointRefused(`${field} ${raw} is refused: ${check.reason}`);
    const p = check.pinned;
    if (!p) return undefined;
    return ((_host: string, opts: { all?: boolean }, cb: (...args: unknown[]) => void) => {
      if (opts?.all) cb(null, [{ address: p.address, family: p.family }]);
      else cb(null, p.address, p.family);
    }) as unknown as LookupFunction;
  };

  return async (spec: ClientSpec) => {
    const sims = o.simulators;
    if (spec.service === 'fcm') {
      const own = spec.credential ? (JSON.parse(spec.credential) as FcmServiceAccount) : null;
      const custom = spec.endpoints.fcm !== undefined || spec.endpoints.oauthToken !== undefined;
      if (sims && !custom) {
        const sa = own ? { ...own, tokenUri: sims.fcm.tokenUrl } : sims.defaultServiceAccount();
        sims.trustServiceAccount(sa);
        return new FcmClient({ serviceAccount: sa, baseUrl: sims.fcm.url, tokenUrl: sims.fcm.tokenUrl, maxSockets: o.concurrency });
      }
      if (!own) return null;
      const tokenUrl = spec.endpoints.oauthToken ?? own.tokenUri;
      const lookups = {
        fcm: await pinned(spec.endpoints.fcm, 'endpoints.fcm'),
        token: tokenUrl === GOOGLE_TOKEN_URI ? undefined : await pinned(tokenUrl, spec.endpoints.oauthToken ? 'endpoints.oauthToken' : 'the service account\'s token_uri'),
      };
      return new FcmClient({ serviceAccount: own, baseUrl: spec.endpoints.fcm, tokenUrl, maxSockets: o.concurrency, lookup: lookups.fcm, tokenLookup: lookups.token, ca: o.ca() });
    }
    const own = spec.credential ? (JSON.parse(spec.credential) as ApnsAuthKey) : null;
    if (sims && spec.endpoints.apns === undefined) {
      const key = own ?? sims.defaultApnsKey();
      sims.trustApnsKey(key, own !== null);
      return new ApnsClient({ key, environment: spec.environment, baseUrl: sims.apns[spec.environment].url, ca: sims.apnsCa, maxStreams: 1000 });
    }
    if (!own) return null;
    if (spec.endpoints.apns && new URL(spec.endpoints.apns).protocol !== 'https:') throw new EndpointRefused(`endpoints.apns ${spec.endpoints.apns} is refused: APNs is HTTP/2 over TLS (https)`);
    const lookup = await pinned(spec.endpoints.apns, 'endpoints.apns');
    return new ApnsClient({ key: own, environment: spec.environment, baseUrl: spec.endpoints.apns, lookup, ca: spec.endpoints.apns ? o.ca() : undefined });
  };
}
