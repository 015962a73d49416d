import type { FastifyInstance } from 'fastify';
import { registerInspectListing, type InspectAdminDeps } from '../../admin/inspect-routes.js';
import type { MailSimulator } from '../../sim/mail/simulator.js';
import { registerSimMailRoutes } from '../../sim/mail/sim-mail-routes.js';
import type { EmailService } from './email-service.js';

/** Email's part of the admin API: `ferry email list|show` and the embedded mail simulator's mailbox (`ferry sim mail messages`). */
export async function emailAdminRoutes(app: FastifyInstance, deps: InspectAdminDeps & { email: EmailService; simulator: () => MailSimulator | null }): Promise<void> {
  registerSimMailRoutes(app, deps.simulator);
  registerInspectListing(app, deps, {
    path: '/admin/email/messages',
    code: 'EMAIL_MESSAGES',
    table: 'email_messages',
    select: `id, account_id AS "accountId", status, stream, from_address AS "from", recipient AS "to", subject, created_at AS "createdAt"`,
    time: { column: 'created_at', kind: 'ms' },
    id: 'id',
    status: (p) => `status = ${p}`,
    statusPattern: '^[a-z_]+$',
    show: { notFound: 'EMAIL_NOT_FOUND', get: (accountId, id) => deps.email.message(accountId, id) },
  });
}
