import type { InspectListing } from '../../admin/inspect-routes.js';
import type { WebhookStore } from './webhook-store.js';

/** `ferry webhooks list|show`: endpoints across accounts, each with its stream (cursor) and its last 20 deliveries. */
export function webhookListing(store: WebhookStore): InspectListing {
  return {
    path: '/admin/webhooks',
    code: 'WEBHOOKS',
    table: 'webhook_endpoints',
    select: `id, account_id AS "accountId", url, events, enabled, disabled_reason AS "disabledReason", created_at AS "createdAt"`,
    time: { column: 'created_at', kind: 'tz' },
    id: 'id',
    status: (p) => `(CASE WHEN enabled THEN 'enabled' ELSE 'disabled' END) = ${p}`,
    statusPattern: '^(?:enabled|disabled)$',
    show: {
      notFound: 'WEBHOOK_NOT_FOUND',
      async get(accountId, id) {
        const endpoint = await store.get(accountId, id);
        return endpoint && { ...endpoint, stream: await store.stream(id), deliveries: await store.deliveries(id, { limit: 20 }) };
      },
    },
  };
}
