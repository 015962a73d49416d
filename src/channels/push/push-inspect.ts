import type { InspectListing } from '../../admin/inspect-routes.js';
import type { PushService } from './push-service.js';
import { appView, deviceView } from './push-schemas.js';

/** `ferry push apps list|show`: apps across accounts, with the public summaries of their credentials. */
export function pushAppListing(service: PushService): InspectListing {
  return {
    path: '/admin/push/apps',
    code: 'PUSH_APPS',
    table: 'push_apps',
    select: `id, account_id AS "accountId", name, fcm_project_id AS "fcmProjectId", apns_bundle_id AS "apnsBundleId", paused_service AS "paused", created_at AS "createdAt"`,
    time: { column: 'created_at', kind: 'tz' },
    id: 'id',
    status: null,
    statusPattern: '',
    show: {
      notFound: 'APP_NOT_FOUND',
      async get(accountId, id) {
        const app = await service.getApp(accountId, id);
        return app && appView(app);
      },
    },
  };
}

/** `ferry push devices list|show`: devices across accounts (tokens only in `show`). */
export function pushDeviceListing(service: PushService): InspectListing {
  return {
    path: '/admin/push/devices',
    code: 'PUSH_DEVICES',
    table: 'push_devices',
    select: `id, account_id AS "accountId", app_id AS "appId", platform, user_id AS "userId", status, invalid_reason AS "invalidReason", created_at AS "createdAt"`,
    time: { column: 'created_at', kind: 'tz' },
    id: 'id',
    status: (p) => `status = ${p}`,
    statusPattern: '^(active|invalid)$',
    show: {
      notFound: 'DEVICE_NOT_FOUND',
      async get(accountId, id) {
        const device = await service.getDevice(accountId, id);
        return device && deviceView(device);
      },
    },
  };
}
