import { ApiError } from '../../http/errors.js';
import type { OutboundPipeline } from '../../outbound/index.js';
import type { Db } from '../../store/types.js';
import { newId } from '../../util/ids.js';
import { batchJobs, type DeviceRow, type PushService, type SendMessage, serviceOf } from './batch-job.js';
import type { FanOut } from './fan-out.js';
import { apnsPayloadBytes } from './providers/apns.js';
import { fcmPayloadBytes } from './providers/fcm.js';
import { PAYLOAD_LIMIT_BYTES, type PushNotification } from './providers/types.js';
import { appServicesOf, deviceOf, insertSend, type OutcomeRow, outcomesOf, sendOf, sendsOf, type SendRow, topicSize, userDevices } from './send-store.js';

export interface SendInput {
  accountId: string;
  to: { deviceId?: string; userId?: string; topic?: string };
  notification?: PushNotification;
  data?: Record<string, string>;
  priority?: 'high' | 'normal';
  ttlSeconds?: number;
  collapseKey?: string;
}

/** What POST /v1/push/send answers. `final`: the one device's outcome is known (200), else the send goes on (202). */
export interface SendAnswer {
  pushId: string;
  status: 'queued' | 'sent' | 'failed' | 'invalidated';
  targeted: number;
  providerId?: string | null;
  error?: { code: string; providerCode: string | null; message: string | null } | null;
  final: boolean;
}

export interface OutcomeView {
  deviceId: string;
  status: 'sent' | 'failed' | 'invalidated';
  providerId: string | null;
  error: { code: string; providerCode: string | null; message: string | null } | null;
  at: string;
}

export interface SendView {
  pushId: string;
  status: 'expanding' | 'sending' | 'completed';
  target: { kind: string; value: string };
  notification: PushNotification | null;
  targeted: number;
  sent: number;
  failed: number;
  invalidated: number;
  pending: number;
  createdAt: string;
  completedAt: string | null;
}

/** How long a send's devices may take: push.deadlineSeconds, shortened by a ttlSeconds (to 60 s at least). */
export function deadlineOf(message: Pick<SendMessage, 'ttlSeconds'>, deadlineMs: number): number {
  return message.ttlSeconds !== undefined ? Math.min(deadlineMs, Math.max(60_000, message.ttlSeconds * 1000)) : deadlineMs;
}

const iso = (v: Date | string | null): string | null => (v === null ? null : new Date(v).toISOString());

/**
 * Sends: a single device is sent at once under the pipeline's claim and answered with its outcome when the service
 * answers within `inlineWaitMs`; a user's devices are batched in the request's transaction; a topic is accepted as a
 * send to expand (fan-out.ts) and answered at once.
 */
export class PushSends {
  constructor(
    private readonly o: {
      db: Db;
      pipeline: () => OutboundPipeline;
      fanOut: FanOut;
      batchSize: number;
      maxDevicesPerUser: number;
      simulatedApns: boolean;
      /** How long a send to one device may take; a ttlSeconds shortens it. */
      deadlineMs: number;
      inlineWaitMs: number;
      clock?: () => number;
    },
  ) {}

  private now(): number {
    return (this.o.clock ?? Date.now)();
  }

  async send(input: SendInput): Promise<SendAnswer> {
    const message: SendMessage = {
      ...(input.notification ? { notification: input.notification } : {}),
      ...(input.data ? { data: input.data } : {}),
      priority: input.priority ?? 'high',
      ...(input.ttlSeconds !== undefined ? { ttlSeconds: input.ttlSeconds } : {}),
      ...(input.collapseKey !== undefined ? { collapseKey: input.collapseKey } : {}),
    };
    const now = this.now();
    const deadlineAt = now + deadlineOf(message, this.o.deadlineMs);
    const pushId = newId('push_', now);
    const { to } = input;
    if (to.topic !== undefined) {
      this.checkSize(message, ['fcm', 'apns']);
      const size = await topicSize(this.o.db, input.accountId, to.topic);
      if (size === null) throw new ApiError('TOPIC_NOT_FOUND', { data: { topic: to.topic } });
      await insertSend(this.o.db, { id: pushId, accountId: input.accountId, targetKind: 'topic', target: to.topic, message, status: 'expanding', targeted: 0, now });
      this.o.fanOut.wake();
      return { pushId, status: 'queued', targeted: size, final: false };
    }
    const devices = await this.devicesOf(input.accountId, to);
    const apps = await appServicesOf(this.o.db, input.accountId, [...new Set(devices.map((d) => d.app_id))], this.o.simulatedApns);
    this.checkSize(message, [...new Set(devices.map((d) => serviceOf(d, apps.get(d.app_id) ?? { apns: false, apnsEnvironment: 'production' })))]);
    const kind = to.deviceId !== undefined ? 'device' : 'user';
    const target = to.deviceId ?? to.userId!;
    const jobs = batchJobs({ accountId: input.accountId, pushId, message, devices, apps, batchSize: this.o.batchSize, keepSent: true, priority: true, deadlineAt });
    const targeted = jobs.reduce((n, j) => n + j.payload.devices.length, 0);
    if (!targeted) throw new ApiError('APP_NOT_FOUND', { message: 'The devices\' app was deleted' });
    const row = (q: Parameters<typeof insertSend>[0]) => insertSend(q, { id: pushId, accountId: input.accountId, targetKind: kind, target, message, status: 'sending', targeted, now });
    if (kind === 'user' || this.o.inlineWaitMs <= 0) {
      await this.o.pipeline().submit(jobs, row);
      return { pushId, status: 'queued', targeted, final: false };
    }
    const { attempt } = await this.o.pipeline().submitAndAttempt(jobs[0], row);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<null>((resolve) => {
      timer = setTimeout(() => resolve(null), this.o.inlineWaitMs);
    });
    const r = await Promise.race([attempt.catch(() => null), late]).finally(() => clearTimeout(timer));
    if (!r) return { pushId, status: 'queued', targeted, final: false };
    const [outcome] = await outcomesOf(this.o.db, pushId, { after: null, limit: 1 });
    if (!outcome) return { pushId, status: 'queued', targeted, final: false };
    const view = outcomeView(outcome);
    return { pushId, status: view.status, targeted, providerId: view.providerId, error: view.error, final: true };
  }

  private async devicesOf(accountId: string, to: SendInput['to']): Promise<DeviceRow[]> {
    if (to.deviceId !== undefined) {
      const d = await deviceOf(this.o.db, accountId, to.deviceId);
      if (!d) throw new ApiError('DEVICE_NOT_FOUND', { data: { deviceId: to.deviceId } });
      if (d.status !== 'active') throw new ApiError('DEVICE_INVALID', { data: { deviceId: to.deviceId } });
      return [d];
    }
    const devices = await userDevices(this.o.db, accountId, to.userId!, this.o.maxDevicesPerUser);
    if (!devices.length) throw new ApiError('NO_ACTIVE_DEVICES', { data: { userId: to.userId } });
    return devices;
  }

  /** Each service's limit, measured as that service measures it. */
  private checkSize(message: SendMessage, services: readonly PushService[]): void {
    for (const service of services) {
      const probe = { ...message, token: '', platform: service === 'apns' ? ('ios' as const) : ('android' as const) };
      const bytes = service === 'apns' ? apnsPayloadBytes(probe) : fcmPayloadBytes(probe);
      if (bytes > PAYLOAD_LIMIT_BYTES) {
        const name = service === 'apns' ? 'APNs' : 'FCM';
        throw new ApiError('PAYLOAD_TOO_LARGE', {
          message: `The notification is ${bytes} bytes as ${name} measures it; ${name} accepts at most ${PAYLOAD_LIMIT_BYTES}`,
          data: { platform: service, bytes, limit: PAYLOAD_LIMIT_BYTES },
        });
      }
    }
  }

  async get(accountId: string, pushId: string): Promise<SendView | null> {
    const s = await sendOf(this.o.db, accountId, pushId);
    return s ? sendView(s) : null;
  }

  async outcomes(accountId: string, pushId: string, o: { after: string | null; limit: number; status?: string }): Promise<{ outcomes: OutcomeView[]; nextCursor: string | null } | null> {
    const s = await sendOf(this.o.db, accountId, pushId);
    if (!s) return null;
    const rows = await outcomesOf(this.o.db, pushId, { ...o, limit: o.limit + 1 });
    const more = rows.length > o.limit;
    const page = more ? rows.slice(0, o.limit) : rows;
    return { outcomes: page.map(outcomeView), nextCursor: more ? page[page.length - 1].device_id : null };
  }

  async list(accountId: string, o: { before: string | null; limit: number }): Promise<{ sends: SendView[]; nextCursor: string | null }> {
    const rows = await sendsOf(this.o.db, accountId, { before: o.before, limit: o.limit + 1 });
    const more = rows.length > o.limit;
    const page = more ? rows.slice(0, o.limit) : rows;
    return { sends: page.map(sendView), nextCursor: more ? page[page.length - 1].id : null };
  }
}

function sendView(s: SendRow): SendView {
  const message = typeof s.message === 'string' ? (JSON.parse(s.message) as SendMessage) : s.message;
  return {
    pushId: s.id,
    status: s.status,
    target: { kind: s.target_kind, value: s.target },
    notification: message.notification ?? null,
    targeted: Number(s.targeted),
    sent: Number(s.sent),
    failed: Number(s.failed),
    invalidated: Number(s.invalidated),
    pending: Number(s.pending),
    createdAt: iso(s.created_at)!,
    completedAt: iso(s.completed_at),
  };
}

function outcomeView(r: OutcomeRow): OutcomeView {
  return {
    deviceId: r.device_id,
    status: r.status,
    providerId: r.provider_id,
    error: r.error ? { code: r.error, providerCode: r.provider_error, message: r.message } : null,
    at: iso(r.at)!,
  };
}
