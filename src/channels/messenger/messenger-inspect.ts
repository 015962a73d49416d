import type { InspectListing } from '../../admin/inspect-routes.js';
import type { MessengerService } from './messenger-service.js';

/** `ferry messenger list|show`: messenger messages across accounts. */
export function messengerListing(service: MessengerService): InspectListing {
  return {
    path: '/admin/messenger/messages',
    code: 'MESSENGER_MESSAGES',
    table: 'messenger_messages',
    select: `id, account_id AS "accountId", status, type, business_number AS "from", recipient AS "to", ferry_error AS "error", created_at AS "createdAt"`,
    time: { column: 'created_at', kind: 'ms' },
    id: 'id',
    status: (p) => `status = ${p}`,
    statusPattern: '^[a-z_]+$',
    show: { notFound: 'MESSAGE_NOT_FOUND', get: (accountId, id) => service.status(accountId, id) },
  };
}
