import { createHash } from 'node:crypto';
import type { Db } from '../../store/types.js';
import type { ModuleCredentials } from '../../security/credential-store.js';
import { PushAppCredentials } from './app-credentials.js';
import type { PushService } from './batch-job.js';
import type { PushProviderClient } from './providers/types.js';

/** Provider base URLs an app names for itself (private relays, other implementations of the protocols). */
export interface AppEndpoints {
  fcm?: string;
  oauthToken?: string;
  apns?: string;
}

/** What a client is built from. `credential` is the stored JSON (credentials.ts shapes), null when the app has none. */
export interface ClientSpec {
  accountId: string;
  appId: string;
  service: PushService;
  environment: 'sandbox' | 'production';
  credential: string | null;
  endpoints: AppEndpoints;
}

/** Builds a client for a spec; null when there is no way to reach the service (no credentials and no simulator). */
export type ClientFactory = (spec: ClientSpec) => Promise<PushProviderClient | null>;

export type ClientLookup =
  | { kind: 'client'; client: PushProviderClient }
  | { kind: 'paused'; reason: string }
  | { kind: 'none'; code: 'APP_NOT_FOUND' | 'PUSH_NO_CREDENTIALS' | 'PUSH_ENDPOINT_REFUSED'; message: string };

interface Entry {
  version: string;
  client: PushProviderClient;
  /** Epoch ms of its last lookup: a client idle longer than IDLE_MS is closed (a deleted or quiet app's sessions). */
  usedAt: number;
}

const IDLE_MS = 10 * 60_000;
const SWEEP_EVERY_MS = 60_000;

/**
 * One provider client per (app, service, environment), kept while its credentials and endpoints stay the same: the
 * FCM access token and the APNs session and provider token live in the client, so every batch of an app shares them.
 * Each lookup reads the app's row and credential (one batch of devices each), so a rotated credential, changed
 * endpoints or a pause take effect at the next batch of any instance.
 */
export class ProviderClients {
  private readonly entries = new Map<string, Entry>();
  private readonly building = new Map<string, Promise<Entry | null>>();
  private sweptAt = 0;

  constructor(private readonly o: { db: Db; credentials: ModuleCredentials; build: ClientFactory; clock?: () => number }) {}

  /** Closes the clients nobody looked up for IDLE_MS (an app deleted, or quiet): their connections and sessions go. */
  private sweep(now: number): void {
    if (now - this.sweptAt < SWEEP_EVERY_MS) return;
    this.sweptAt = now;
    for (const [key, e] of this.entries) {
      if (now - e.usedAt <= IDLE_MS) continue;
      this.entries.delete(key);
      void e.client.close().catch(() => undefined);
    }
  }

  async lookup(accountId: string, appId: string, service: PushService, environment?: 'sandbox' | 'production'): Promise<ClientLookup> {
    const { rows } = await this.o.db.query<{ endpoints: AppEndpoints | string; paused_service: string | null; paused_reason: string | null; apns_environment: string | null }>(
      `SELECT endpoints, paused_service, paused_reason, apns_environment FROM push_apps WHERE id = $1 AND account_id = $2`,
      [appId, accountId],
    );
    const app = rows[0];
    if (!app) return { kind: 'none', code: 'APP_NOT_FOUND', message: `the app ${appId} was deleted` };
    if (app.paused_service === service) return { kind: 'paused', reason: app.paused_reason ?? `the ${service} credentials were refused` };
    const credential = await this.o.credentials.get(accountId, PushAppCredentials.nameOf(appId, service));
    const endpoints: AppEndpoints = typeof app.endpoints === 'string' ? (JSON.parse(app.endpoints) as AppEndpoints) : (app.endpoints ?? {});
    const env = environment ?? (app.apns_environment === 'sandbox' ? 'sandbox' : 'production');
    const key = `${appId}\u0000${service}\u0000${env}`;
    const version = createHash('sha256').update(`${credential ?? ''}\u0000${JSON.stringify(endpoints)}`).digest('base64url');
    const now = (this.o.clock ?? Date.now)();
    this.sweep(now);
    const cached = this.entries.get(key);
    if (cached?.version === version) {
      cached.usedAt = now;
      return { kind: 'client', client: cached.client };
    }
    let pending = this.building.get(key);
    if (!pending) {
      pending = this.build(key, version, { accountId, appId, service, environment: env, credential, endpoints }, cached);
      this.building.set(key, pending);
      void pending.finally(() => this.building.delete(key)).catch(() => undefined);
    }
    let entry: Entry | null;
    try {
      entry = await pending;
    } catch (err) {
      // The factory refuses what it cannot build (an endpoint the SSRF guard refused): the batch fails with the reason.
      if ((err as Error).name === 'EndpointRefused') return { kind: 'none', code: 'PUSH_ENDPOINT_REFUSED', message: (err as Error).message };
      throw err;
    }
    if (!entry) return { kind: 'none', code: 'PUSH_NO_CREDENTIALS', message: `the app ${appId} has no ${service === 'fcm' ? 'FCM service account' : 'APNs key'}` };
    return { kind: 'client', client: entry.client };
  }

  private async build(key: string, version: string, spec: ClientSpec, previous: Entry | undefined): Promise<Entry | null> {
    const client = await this.o.build(spec);
    if (previous) {
      this.entries.delete(key);
      void previous.client.close().catch(() => undefined);
    }
    if (!client) return null;
    const entry = { version, client, usedAt: (this.o.clock ?? Date.now)() };
    this.entries.set(key, entry);
    return entry;
  }

  /** Closes every client (their sessions and connections). */
  async close(): Promise<void> {
    const all = [...this.entries.values()];
    this.entries.clear();
    await Promise.allSettled(all.map((e) => e.client.close()));
  }
}
