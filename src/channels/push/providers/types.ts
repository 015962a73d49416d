import type { SendResult } from '../../../outbound/index.js';

/**
 * What push's delivery hands a provider client and what it gets back. One client per app and service (FCM project,
 * APNs key and environment); the client speaks the service's protocol and nothing else, and answers every provider
 * answer with a `SendResult` classified by its one error table (never throws for one).
 */

export type PushPlatform = 'android' | 'ios' | 'web';

export interface PushNotification {
  title?: string;
  body?: string;
  /** An image URL shown with the notification (FCM notification.image, APNs mutable-content for a service extension). */
  image?: string;
  sound?: string;
  /** The app icon's badge (APNs aps.badge, FCM android notification_count). */
  badge?: number;
}

/** One notification to one device token. */
export interface PushMessage {
  token: string;
  platform: PushPlatform;
  notification?: PushNotification;
  /** Custom key/value pairs handed to the app (FCM `data`, APNs top-level keys beside `aps`). */
  data?: Record<string, string>;
  priority: 'high' | 'normal';
  /** Seconds the service may hold it for an offline device (0: now or never); the service's default when absent. */
  ttlSeconds?: number;
  /** Replaces an earlier undelivered notification with the same key (FCM collapse_key / APNs apns-collapse-id). */
  collapseKey?: string;
}

/** A client of one provider service for one app. */
export interface PushProviderClient {
  /** One attempt for one device: sent (with the provider's id) or an error classified by the provider's error table. */
  send(message: PushMessage, signal?: AbortSignal): Promise<SendResult>;
  /** Closes its sessions and connections. */
  close(): Promise<void>;
}

/**
 * Ferry codes with a meaning to push's delivery beyond retry/fail (the error tables map provider codes onto them):
 * a dead token invalidates the device; rejected credentials pause the app's sends until its credentials change.
 */
export const DEVICE_UNREGISTERED = 'DEVICE_UNREGISTERED';
export const DEVICE_TOKEN_INVALID = 'DEVICE_TOKEN_INVALID';
export const PUSH_CREDENTIALS_REJECTED = 'PUSH_CREDENTIALS_REJECTED';
/** Codes that invalidate the device they were answered for. */
export const INVALIDATING_CODES: ReadonlySet<string> = new Set([DEVICE_UNREGISTERED, DEVICE_TOKEN_INVALID]);

/** The service's size limit on a notification's payload: 4,096 bytes for both FCM and APNs (each measures its own). */
export const PAYLOAD_LIMIT_BYTES = 4096;
