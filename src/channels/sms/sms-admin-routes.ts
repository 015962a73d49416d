import type { FastifyInstance } from 'fastify';
import { registerInspectListing, type InspectAdminDeps } from '../../admin/inspect-routes.js';
import { registerSimRoutes, type SimAdminDeps } from '../../sim/smpp/sim-admin-routes.js';
import { registerGatewayRoutes, type GatewayAdminDeps } from './gateway-admin-routes.js';
import { registerPricingRoutes, type PricingAdminDeps } from './pricing-admin-routes.js';

/**
 * The historic admin paths of SMS (issue 43): the SMS product was the gateway before modules had prefixes, and the
 * CLI, the docs and operators' scripts call these; they stay, declared, instead of moving under /admin/sms.
 */
export const SMS_HISTORIC_ADMIN_PATHS = [
  '/admin/routes',
  '/admin/upstreams',
  '/admin/messages',
  '/admin/receipts',
  '/admin/pricing',
  '/admin/sim/messages',
  '/admin/sim/behaviour',
] as const;

export interface SmsAdminDeps {
  gateway: GatewayAdminDeps;
  pricing: PricingAdminDeps;
  sim: SimAdminDeps;
  inspect: InspectAdminDeps;
}

/** SMS's part of the admin API: routes, upstreams, messages, receipts, pricing, the SMSC simulator. */
export async function smsAdminRoutes(app: FastifyInstance, deps: SmsAdminDeps): Promise<void> {
  registerGatewayRoutes(app, deps.gateway);
  registerPricingRoutes(app, deps.pricing);
  registerSimRoutes(app, deps.sim);
  // `ferry messages list`; `ferry messages show` is the gateway's /admin/messages/:id (ledger row, history, parts, route).
  registerInspectListing(app, deps.inspect, {
    path: '/admin/messages',
    code: 'MESSAGES',
    table: 'messages',
    select: `id, account_id AS "accountId", status, ingress, source AS "from", destination AS "to", segments, error_code AS "errorCode", upstream_id AS "upstream", created_at AS "createdAt"`,
    time: { column: 'created_at', kind: 'tz' },
    id: 'id',
    status: (p) => `status = ${p}`,
    statusPattern: '^[a-z]+$',
  });
}
