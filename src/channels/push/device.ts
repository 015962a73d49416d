import type { PushPlatform } from './providers/types.js';

export type DeviceStatus = 'active' | 'invalid';
export type ApnsEnvironment = 'sandbox' | 'production';

/** A device registered to an app: one token of one installation. */
export interface PushDevice {
  id: string;
  accountId: string;
  appId: string;
  token: string;
  platform: PushPlatform;
  /** APNs environment of an iOS token; null: the app's default. */
  environment: ApnsEnvironment | null;
  userId: string | null;
  locale: string | null;
  timezone: string | null;
  tags: string[];
  status: DeviceStatus;
  invalidReason: string | null;
  invalidatedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

/** What a registration or a change sets; absent: unchanged (a new device: null, no tags). */
export interface DeviceFields {
  environment?: ApnsEnvironment | null;
  userId?: string | null;
  locale?: string | null;
  timezone?: string | null;
  tags?: string[];
}
