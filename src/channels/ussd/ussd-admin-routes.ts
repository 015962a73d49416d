import type { FastifyInstance } from 'fastify';
import { registerInspectListing, type InspectAdminDeps } from '../../admin/inspect-routes.js';
import type { SimAdminDeps } from '../../sim/smpp/sim-admin-routes.js';
import { registerUssdPhoneRoutes } from '../../sim/ussd/ussd-phone-routes.js';
import { displayCode } from './service-code.js';
import type { SessionStore } from './session-store.js';

/** USSD's part of the admin API: `ferry ussd list|show` and the handset on the embedded SMSC simulator (`ferry ussd dial`). */
export async function ussdAdminRoutes(app: FastifyInstance, deps: InspectAdminDeps & SimAdminDeps & { sessions: SessionStore }): Promise<void> {
  registerUssdPhoneRoutes(app, deps);
  registerInspectListing(app, deps, {
    path: '/admin/ussd/sessions',
    code: 'USSD_SESSIONS',
    table: 'ussd_sessions',
    select: `id, account_id AS "accountId", status, end_status AS "endStatus", service_code AS "serviceCode", phone, channel, hops, started_at AS "createdAt"`,
    time: { column: 'started_at', kind: 'ms' },
    id: 'id',
    // active or ended, or how a session ended (Success, Incomplete, Failed).
    status: (p) => `(status = ${p} OR end_status = ${p})`,
    statusPattern: '^[A-Za-z]+$',
    // Codes are stored without * and #; shown as dialled, as the API shows them.
    shape: (r) => ({ ...r, serviceCode: displayCode(String(r.serviceCode)) }),
    show: {
      notFound: 'USSD_SESSION_NOT_FOUND',
      async get(accountId, id) {
        const s = await deps.sessions.get(accountId, id);
        return s && { ...s, serviceCode: displayCode(s.serviceCode) };
      },
    },
  });
}
