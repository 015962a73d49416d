import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../http/errors.js';
import { ok } from '../../http/envelope.js';
import { runningSimulator, type SimAdminDeps } from '../smpp/sim-admin-routes.js';
import { UssdPhone } from './ussd-phone.js';

/** POST /admin/sim/ussd: the USSD module's simulator control, a handset on the embedded SMSC simulator. */
export function registerUssdPhoneRoutes(app: FastifyInstance, deps: SimAdminDeps): void {
  // USSD: a handset on the embedded simulator dials a code, answers screens, hangs up (`ferry ussd dial`).
  app.post<{ Body: { phone: string; code?: string; input?: string; session?: number; release?: boolean } }>(
    '/admin/sim/ussd',
    {
      schema: {
        body: {
          type: 'object',
          required: ['phone'],
          additionalProperties: false,
          properties: {
            phone: { type: 'string', pattern: '^\\+?[0-9]{5,20}$' },
            code: { type: 'string', pattern: '^[*#0-9]{2,40}$', description: 'dial this code (a new dialogue)' },
            input: { type: 'string', maxLength: 182, description: 'answer the screen of dialogue `session`' },
            session: { type: 'integer', minimum: 0, maximum: 255 },
            release: { type: 'boolean', description: 'hang up dialogue `session`' },
          },
        },
      },
    },
    async (req) => {
      const phone = new UssdPhone(runningSimulator(deps));
      const b = req.body;
      const number = b.phone.replace(/^\+/, '');
      if (b.code !== undefined) return ok(req, 'SIM_USSD_SCREEN', await phone.dial(number, b.code, b.session));
      if (b.session === undefined) throw new ApiError('VALIDATION_ERROR', { data: { errors: [{ field: 'session', message: 'give code to dial, or session with input or release' }] } });
      if (b.release) {
        await phone.release(number, b.session);
        return ok(req, 'SIM_USSD_RELEASED', { session: b.session });
      }
      return ok(req, 'SIM_USSD_SCREEN', await phone.reply(number, b.session, b.input ?? ''));
    },
  );
}
