import type { NewOutboundJob } from '../../outbound/index.js';
import type { PushMessage, PushPlatform } from './providers/types.js';

/** The two services a device is reached through; each is an outbound provider of its own (`push-fcm`, `push-apns`). */
export type PushService = 'fcm' | 'apns';
export const PROVIDER_OF: Readonly<Record<PushService, string>> = { fcm: 'push-fcm', apns: 'push-apns' };

/** What every device of a send gets (push_sends.message). */
export type SendMessage = Omit<PushMessage, 'token' | 'platform'>;

/** One device as a batch carries it: [device id, token, platform]. Tuples keep a 500-device job's JSON small. */
export type BatchDevice = readonly [id: string, token: string, platform: PushPlatform];

/**
 * The payload of one outbound job of push: a batch of devices of one send, one app, one service and (APNs) one
 * environment. A job carries what it sends, so no device is looked up again when it is sent or retried.
 */
export interface BatchPayload {
  pushId: string;
  appId: string;
  service: PushService;
  /** APNs only: which APNs the tokens belong to. */
  environment?: 'sandbox' | 'production';
  message: SendMessage;
  devices: BatchDevice[];
  /** 1 for a batch from the fan-out; n+1 for the devices of a batch that must be tried again. */
  round: number;
  /** The send's target kind: only device and user sends keep a row for each device that got its push. */
  keepSent: boolean;
}

/** A device row as fan-out and sends read it. */
export interface DeviceRow {
  id: string;
  app_id: string;
  token: string;
  platform: PushPlatform;
  environment: 'sandbox' | 'production' | null;
}

/** An app's services and default environment, as the grouping needs them. */
export interface AppServices {
  /** The app has (or, with the simulators, gets) APNs credentials: iOS tokens of 64 hex digits go to APNs. */
  apns: boolean;
  apnsEnvironment: 'sandbox' | 'production';
}

const APNS_TOKEN = /^[0-9a-fA-F]{64}$/;

/**
 * Which service reaches a device: an APNs device token (64 hex digits) of an iOS device goes to APNs when the app has
 * APNs; every other token is an FCM registration token (Android, web, and iOS apps that register through Firebase).
 */
export function serviceOf(device: Pick<DeviceRow, 'platform' | 'token'>, app: AppServices): PushService {
  return device.platform === 'ios' && app.apns && APNS_TOKEN.test(device.token) ? 'apns' : 'fcm';
}

/** Groups devices into batch jobs of at most `batchSize`: one per (app, service, environment). */
export function batchJobs(o: {
  accountId: string;
  pushId: string;
  message: SendMessage;
  devices: readonly DeviceRow[];
  apps: ReadonlyMap<string, AppServices>;
  batchSize: number;
  keepSent: boolean;
  round?: number;
  priority?: boolean;
  notBefore?: number;
  deadlineAt?: number;
}): NewOutboundJob<BatchPayload>[] {
  const groups = new Map<string, { appId: string; service: PushService; environment?: 'sandbox' | 'production'; devices: BatchDevice[] }>();
  const jobs: NewOutboundJob<BatchPayload>[] = [];
  const flush = (g: { appId: string; service: PushService; environment?: 'sandbox' | 'production'; devices: BatchDevice[] }) => {
    if (!g.devices.length) return;
    jobs.push({
      product: 'push',
      provider: PROVIDER_OF[g.service],
      accountId: o.accountId,
      messageId: o.pushId,
      priority: o.priority,
      notBefore: o.notBefore,
      deadlineAt: o.deadlineAt,
      payload: { pushId: o.pushId, appId: g.appId, service: g.service, environment: g.environment, message: o.message, devices: g.devices, round: o.round ?? 1, keepSent: o.keepSent },
    });
    g.devices = [];
  };
  for (const d of o.devices) {
    const app = o.apps.get(d.app_id);
    if (!app) continue;
    const service = serviceOf(d, app);
    const environment = service === 'apns' ? (d.environment ?? app.apnsEnvironment) : undefined;
    const key = `${d.app_id}\u0000${service}\u0000${environment ?? ''}`;
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { appId: d.app_id, service, environment, devices: [] }));
    g.devices.push([d.id, d.token, d.platform]);
    if (g.devices.length >= o.batchSize) flush(g);
  }
  for (const g of groups.values()) flush(g);
  return jobs;
}
