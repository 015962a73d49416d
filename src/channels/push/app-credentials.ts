import type { ModuleCredentials } from '../../security/credential-store.js';
import type { Queryable } from '../../store/types.js';
import type { ApnsAuthKey, FcmServiceAccount } from './credentials.js';
import type { PushProviderService } from './push-app.js';

/** What an answer shows of an app's FCM service account: never its key. */
export interface FcmCredentialSummary {
  projectId: string;
  clientEmail: string;
  fingerprint: string;
  updatedAt: string;
}

/** What an answer shows of an app's APNs auth key: never the key. */
export interface ApnsCredentialSummary {
  keyId: string;
  teamId: string;
  bundleId: string;
  environment: 'sandbox' | 'production';
  fingerprint: string;
  updatedAt: string;
}

export interface AppCredentialSummaries {
  fcm: FcmCredentialSummary | null;
  apns: ApnsCredentialSummary | null;
}

const NONE: AppCredentialSummaries = { fcm: null, apns: null };

/**
 * An app's provider credentials in the platform's credential store (sealed, per account): `app:<appId>:fcm` holds the
 * parsed service account as JSON, `app:<appId>:apns` the parsed auth key. push_apps never holds them.
 */
export class PushAppCredentials {
  constructor(private readonly store: ModuleCredentials) {}

  static nameOf(appId: string, service: PushProviderService): string {
    return `app:${appId}:${service}`;
  }

  /** Stores (or replaces) one service's credential, in the caller's transaction. */
  async put(q: Queryable, accountId: string, appId: string, service: 'fcm', value: FcmServiceAccount): Promise<void>;
  async put(q: Queryable, accountId: string, appId: string, service: 'apns', value: ApnsAuthKey): Promise<void>;
  async put(q: Queryable, accountId: string, appId: string, service: PushProviderService, value: FcmServiceAccount | ApnsAuthKey): Promise<void> {
    await this.store.put(accountId, PushAppCredentials.nameOf(appId, service), JSON.stringify(value), q);
  }

  /** Removes one service's credential, or (no service) every credential of the app. */
  async remove(q: Queryable, accountId: string, appId: string, service?: PushProviderService): Promise<void> {
    const which = service ? { name: PushAppCredentials.nameOf(appId, service) } : { prefix: `app:${appId}:` };
    await this.store.remove(accountId, which, q);
  }

  /** The public summaries of the credentials of these apps of one account (two reads whatever their number). */
  async summaries(accountId: string, appIds: readonly string[]): Promise<Map<string, AppCredentialSummaries>> {
    const out = new Map<string, AppCredentialSummaries>(appIds.map((id) => [id, { ...NONE }]));
    if (!appIds.length) return out;
    const names = appIds.flatMap((id) => [PushAppCredentials.nameOf(id, 'fcm'), PushAppCredentials.nameOf(id, 'apns')]);
    const [opened, views] = await Promise.all([this.store.open({ accountId, names }), this.store.list(accountId, appIds.length === 1 ? `app:${appIds[0]}:` : 'app:')]);
    const viewOf = new Map(views.map((v) => [v.name, v]));
    for (const c of opened) {
      const [, appId, service] = c.name.split(':');
      const entry = out.get(appId);
      const view = viewOf.get(c.name);
      if (!entry || !view) continue;
      if (service === 'fcm') {
        const sa = JSON.parse(c.value) as FcmServiceAccount;
        entry.fcm = { projectId: sa.projectId, clientEmail: sa.clientEmail, fingerprint: view.fingerprint, updatedAt: view.updatedAt };
      } else if (service === 'apns') {
        const key = JSON.parse(c.value) as ApnsAuthKey;
        entry.apns = { keyId: key.keyId, teamId: key.teamId, bundleId: key.bundleId, environment: key.environment, fingerprint: view.fingerprint, updatedAt: view.updatedAt };
      }
    }
    return out;
  }
}
