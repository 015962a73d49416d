import { ApiError, invalidField } from '../../http/errors.js';
import type { ModuleCredentials } from '../../security/credential-store.js';
import type { TargetGuard } from '../../security/target-guard.js';
import type { Db, Queryable } from '../../store/types.js';
import { PushAppCredentials, type AppCredentialSummaries } from './app-credentials.js';
import { checkEndpoints, parseAppCredentials, type AppInput } from './app-input.js';
import { PushAppStore, type AppFields } from './app-store.js';
import type { DeviceFields, DeviceStatus, PushDevice } from './device.js';
import { checkedToken, checkEnvironment, checkLocale, checkTimezone, checkTopicName } from './device-rules.js';
import { PushDeviceStore } from './device-store.js';
import type { PushApp, PushProviderService } from './push-app.js';
import { newAppId, newDeviceId } from './push-ids.js';
import type { PushPlatform } from './providers/types.js';
import { PushTopicStore, type PushTopic } from './topic-store.js';

/** An app with the public summaries of its credentials: what the API answers. */
export interface AppWithCredentials {
  app: PushApp;
  credentials: AppCredentialSummaries;
}

export interface DeviceRegistration extends DeviceFields {
  token: string;
  platform: PushPlatform;
  appId: string;
}

/** Whom a topic subscription names: devices by id, or every device of a user. */
export type SubscriptionTarget = { deviceIds: string[] } | { userId: string };

export interface PushServiceOptions {
  db: Db;
  credentials: ModuleCredentials;
  maxDevicesPerUser: number;
  /** The SSRF guard an app's endpoints must pass (ctx.http); checked again when a client is built for sending. */
  guard?: TargetGuard;
}

// Two-key advisory lock namespace: registrations of one user (account and userId) run one at a time.
const USER_LOCK_NAMESPACE = 45_001;

/**
 * Mobile push's rules for apps, devices and topics (the send path joins them here). Every method takes the account:
 * another account's app, device or topic is never read or written, and answers as not found.
 */
export class PushService {
  readonly apps = new PushAppStore();
  readonly devices = new PushDeviceStore();
  readonly topics = new PushTopicStore();
  /** The apps' provider credentials (sealed in the platform's store). */
  readonly appCredentials: PushAppCredentials;

  constructor(protected readonly o: PushServiceOptions) {
    this.appCredentials = new PushAppCredentials(o.credentials);
  }

  get db(): Db {
    return this.o.db;
  }

  // Apps

  /** Endpoints a customer names go where the SSRF guard lets them, or are refused naming the field. */
  private async guarded<E extends object>(endpoints: E): Promise<E> {
    if (!this.o.guard) return endpoints;
    for (const [name, url] of Object.entries(endpoints) as Array<[string, string | undefined]>) {
      if (url === undefined) continue;
      const check = await this.o.guard.check(url);
      if (!check.ok) throw invalidField(`endpoints.${name}`, `is refused: ${check.reason}`);
    }
    return endpoints;
  }

  async createApp(accountId: string, input: AppInput & { name: string }): Promise<AppWithCredentials> {
    const creds = parseAppCredentials(input);
    const endpoints = await this.guarded(checkEndpoints(input.endpoints ?? {}));
    const id = newAppId();
    const fields: AppFields = {
      name: input.name,
      fcmProjectId: creds.fcm?.projectId ?? null,
      apnsBundleId: creds.apns?.bundleId ?? null,
      apnsEnvironment: creds.apns?.environment ?? null,
      endpoints,
    };
    const app = await this.o.db.tx(async (q) => {
      const made = await this.apps.insert(q, id, accountId, fields);
      if (creds.fcm) await this.appCredentials.put(q, accountId, id, 'fcm', creds.fcm);
      if (creds.apns) await this.appCredentials.put(q, accountId, id, 'apns', creds.apns);
      return made;
    });
    return this.withCredentials(accountId, app);
  }

  async getApp(accountId: string, id: string): Promise<AppWithCredentials | null> {
    const app = await this.apps.get(this.o.db, accountId, id);
    return app && this.withCredentials(accountId, app);
  }

  async listApps(accountId: string, before: string | undefined, limit: number): Promise<AppWithCredentials[]> {
    const apps = await this.apps.list(this.o.db, accountId, before, limit);
    const summaries = await this.appCredentials.summaries(accountId, apps.map((a) => a.id));
    return apps.map((app) => ({ app, credentials: summaries.get(app.id)! }));
  }

  /**
   * Changes what the body names: a credential given replaces the stored one (and a pause of that service ends: its
   * sends go on with the new one), null removes it; `endpoints` replaces the app's endpoints.
   */
  async updateApp(accountId: string, id: string, input: AppInput): Promise<AppWithCredentials | null> {
    const creds = parseAppCredentials(input);
    const endpoints = input.endpoints === undefined ? undefined : await this.guarded(checkEndpoints(input.endpoints));
    const app = await this.o.db.tx(async (q) => {
      const current = await this.apps.get(q, accountId, id, 'update');
      if (!current) return null;
      const fields: AppFields = {
        name: input.name ?? current.name,
        fcmProjectId: creds.fcm === undefined ? current.fcmProjectId : (creds.fcm?.projectId ?? null),
        apnsBundleId: creds.apns === undefined ? current.apnsBundleId : (creds.apns?.bundleId ?? null),
        apnsEnvironment: creds.apns === undefined ? current.apnsEnvironment : (creds.apns?.environment ?? null),
        endpoints: endpoints ?? current.endpoints,
      };
      const changed: PushProviderService[] = [];
      if (creds.fcm !== undefined) {
        changed.push('fcm');
        if (creds.fcm) await this.appCredentials.put(q, accountId, id, 'fcm', creds.fcm);
        else await this.appCredentials.remove(q, accountId, id, 'fcm');
      }
      if (creds.apns !== undefined) {
        changed.push('apns');
        if (creds.apns) await this.appCredentials.put(q, accountId, id, 'apns', creds.apns);
        else await this.appCredentials.remove(q, accountId, id, 'apns');
      }
      return this.apps.update(q, accountId, id, fields, changed);
    });
    return app && this.withCredentials(accountId, app);
  }

  /** Deletes the app with its credentials, its devices and their topic subscriptions (topic sizes kept exact). */
  async deleteApp(accountId: string, id: string): Promise<boolean> {
    return this.o.db.tx(async (q) => {
      if (!(await this.apps.get(q, accountId, id, 'update'))) return false;
      const deviceIds = await this.devices.idsOfApp(q, accountId, id);
      await this.removeDevices(q, accountId, deviceIds);
      await this.appCredentials.remove(q, accountId, id);
      return this.apps.delete(q, accountId, id);
    });
  }

  private async withCredentials(accountId: string, app: PushApp): Promise<AppWithCredentials> {
    const summaries = await this.appCredentials.summaries(accountId, [app.id]);
    return { app, credentials: summaries.get(app.id)! };
  }

  // Devices

  /**
   * Registers a device (upsert by app and token): a token already known moves to the user given and becomes active
   * again. A user past push.maxDevicesPerUser loses its oldest devices (invalid ones first), named in `dropped`.
   */
  async registerDevice(accountId: string, input: DeviceRegistration): Promise<{ device: PushDevice; created: boolean; dropped: string[] }> {
    const token = checkedToken(input.token, input.platform);
    checkEnvironment(input.platform, input.environment);
    checkLocale(input.locale);
    checkTimezone(input.timezone);
    const fields = deviceFields(input);
    return this.o.db.tx(async (q) => {
      if (!(await this.apps.get(q, accountId, input.appId, 'share'))) throw new ApiError('APP_NOT_FOUND', { message: `No push app ${input.appId}` });
      if (typeof fields.userId === 'string') await this.lockUser(q, accountId, fields.userId);
      const { device, created } = await this.devices.upsert(q, accountId, input.appId, newDeviceId(), token, input.platform, fields);
      const dropped = typeof fields.userId === 'string' ? await this.enforceUserLimit(q, accountId, fields.userId, device.id) : [];
      return { device, created, dropped };
    });
  }

  async getDevice(accountId: string, id: string): Promise<PushDevice | null> {
    return this.devices.get(this.o.db, accountId, id);
  }

  async listDevices(accountId: string, f: { appId?: string; userId?: string; platform?: PushPlatform; status?: DeviceStatus; tag?: string; before?: string; limit: number }): Promise<PushDevice[]> {
    return this.devices.list(this.o.db, accountId, f);
  }

  /** Changes the fields given; a device given a user counts toward that user's limit (`dropped` as at registration). */
  async updateDevice(accountId: string, id: string, input: DeviceFields): Promise<{ device: PushDevice; dropped: string[] } | null> {
    checkLocale(input.locale);
    checkTimezone(input.timezone);
    const fields = deviceFields(input);
    return this.o.db.tx(async (q) => {
      const current = await this.devices.get(q, accountId, id);
      if (!current) return null;
      checkEnvironment(current.platform, fields.environment);
      if (typeof fields.userId === 'string') await this.lockUser(q, accountId, fields.userId);
      const device = await this.devices.update(q, accountId, id, fields);
      if (!device) return null;
      const dropped = typeof fields.userId === 'string' ? await this.enforceUserLimit(q, accountId, fields.userId, device.id) : [];
      return { device, dropped };
    });
  }

  /** Deletes a device and its topic subscriptions; false when the account has no such device. */
  async deleteDevice(accountId: string, id: string): Promise<boolean> {
    return this.o.db.tx(async (q) => (await this.removeDevices(q, accountId, [id])) > 0);
  }

  private async lockUser(q: Queryable, accountId: string, userId: string): Promise<void> {
    await q.query(`SELECT pg_advisory_xact_lock($1, hashtext($2))`, [USER_LOCK_NAMESPACE, `${accountId}:${userId}`]);
  }

  private async enforceUserLimit(q: Queryable, accountId: string, userId: string, keep: string): Promise<string[]> {
    const excess = await this.devices.beyondLimit(q, accountId, userId, keep, this.o.maxDevicesPerUser);
    if (!excess.length) return [];
    await this.removeDevices(q, accountId, excess);
    return excess;
  }

  /** Deletes devices of the account with their subscriptions, topic sizes kept exact; returns how many there were. */
  private async removeDevices(q: Queryable, accountId: string, ids: readonly string[]): Promise<number> {
    const found = await this.devices.lock(q, accountId, ids, 'update');
    await this.topics.detach(q, accountId, found);
    return this.devices.delete(q, accountId, found);
  }

  // Topics

  /** Subscribes devices (by id, or every device of a user) to a topic, which exists from its first subscription. */
  async subscribe(accountId: string, name: string, target: SubscriptionTarget): Promise<{ topic: PushTopic; added: number }> {
    checkTopicName(name);
    return this.o.db.tx(async (q) => {
      const ids = await this.targetDevices(q, accountId, target);
      return this.topics.subscribe(q, accountId, name, ids);
    });
  }

  /** Unsubscribes devices (by id, or every device of a user) from a topic. */
  async unsubscribe(accountId: string, name: string, target: SubscriptionTarget): Promise<{ topic: PushTopic; removed: number }> {
    checkTopicName(name);
    return this.o.db.tx(async (q) => {
      if (!(await this.topics.get(q, accountId, name))) throw new ApiError('TOPIC_NOT_FOUND');
      const ids = await this.targetDevices(q, accountId, target);
      const r = await this.topics.unsubscribe(q, accountId, name, ids);
      if (!r) throw new ApiError('TOPIC_NOT_FOUND');
      return r;
    });
  }

  async getTopic(accountId: string, name: string): Promise<PushTopic | null> {
    checkTopicName(name);
    return this.topics.get(this.o.db, accountId, name);
  }

  async listTopics(accountId: string, after: string | undefined, limit: number): Promise<PushTopic[]> {
    return this.topics.list(this.o.db, accountId, after, limit);
  }

  /**
   * The account's devices a subscription names, locked against deletion until the transaction ends. A device id the
   * account does not have (another account's included) is DEVICE_NOT_FOUND, naming them, and nothing changes.
   */
  private async targetDevices(q: Queryable, accountId: string, target: SubscriptionTarget): Promise<string[]> {
    if ('userId' in target) return this.devices.lock(q, accountId, await this.devices.idsOfUser(q, accountId, target.userId), 'share');
    const wanted = [...new Set(target.deviceIds)];
    const found = await this.devices.lock(q, accountId, wanted, 'share');
    const foundSet = new Set(found);
    const missing = wanted.filter((id) => !foundSet.has(id));
    if (missing.length) throw new ApiError('DEVICE_NOT_FOUND', { message: `No such device: ${missing.join(', ')}`, data: { deviceIds: missing } });
    return found;
  }
}

/** The optional device fields of a body (tags without duplicates). */
function deviceFields(input: DeviceFields): DeviceFields {
  const out: DeviceFields = {};
  if (input.environment !== undefined) out.environment = input.environment;
  if (input.userId !== undefined) out.userId = input.userId;
  if (input.locale !== undefined) out.locale = input.locale;
  if (input.timezone !== undefined) out.timezone = input.timezone;
  if (input.tags !== undefined) {
    if (input.tags.some((t) => !t.trim())) throw invalidField('tags', 'a tag must not be blank');
    out.tags = [...new Set(input.tags)];
  }
  return out;
}
