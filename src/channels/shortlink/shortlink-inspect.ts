import type { InspectListing } from '../../admin/inspect-routes.js';
import type { ShortlinkService } from './shortlink-service.js';

/** Its historic admin path (plural, older than the `/admin/<module>` rule): `ferry shortlinks list|show`. */
export const SHORTLINK_HISTORIC_ADMIN_PATHS = ['/admin/shortlinks'] as const;

/** `ferry shortlinks list|show`: short links across accounts, with the last clicks. */
export function shortlinkListing(service: ShortlinkService): InspectListing {
  return {
    path: '/admin/shortlinks',
    code: 'SHORTLINKS',
    table: 'shortlink_links',
    select: `id, account_id AS "accountId", slug, url, used_clicks AS "clicks", max_clicks AS "maxClicks", expires_at AS "expiresAt", created_at AS "createdAt"`,
    time: { column: 'created_at', kind: 'tz' },
    id: 'id',
    status: null,
    statusPattern: '',
    show: {
      notFound: 'SHORTLINK_NOT_FOUND',
      async get(accountId, id) {
        const link = await service.get(accountId, id);
        return link && { ...link, recentClicks: await service.clicks(accountId, id, undefined, 20) };
      },
    },
  };
}
