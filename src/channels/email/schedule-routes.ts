import type { FastifyInstance } from 'fastify';
import { envelopeSchema, ok, withErrors } from '../../http/envelope.js';
import { ApiError } from '../../http/errors.js';
import type { EmailService } from './email-service.js';
import type { EmailSchedules, ScheduleInput } from './schedules.js';
import type { TemplateStore } from './template-store.js';

const anyObject = { type: 'object', additionalProperties: true } as const;
const idParam = { type: 'object', required: ['id'], properties: { id: { type: 'string', minLength: 1, maxLength: 64 } } } as const;

/** Re-engagement schedules under /v1/email/schedules (schedules.ts). */
export async function scheduleRoutes(app: FastifyInstance, deps: { schedules: EmailSchedules; templates: TemplateStore; email: EmailService }): Promise<void> {
  const { schedules, templates, email } = deps;
  app.post<{ Body: ScheduleInput & { startAt?: string } }>(
    '/v1/email/schedules',
    {
      config: { scope: 'email:manage' },
      schema: {
        tags: ['email'],
        summary: 'Create a re-engagement schedule',
        description:
          'Every intervalMinutes, the template goes (stream bulk) to recipients of the account’s earlier mail with no open or click for inactiveDays, ' +
          'at most once per capDays each, never in quietHours (UTC, start ≤ hour < end, may wrap midnight), never to suppressed addresses; ' +
          'at most maxPerRun per run. The template gets data.email. Runs are listed on GET /schedules/{id}.',
        body: {
          type: 'object',
          required: ['name', 'templateId', 'from', 'inactiveDays'],
          additionalProperties: false,
          properties: {
            name: { type: 'string', minLength: 1, maxLength: 200 },
            templateId: { type: 'string', maxLength: 64 },
            from: { type: 'string', minLength: 3, maxLength: 254 },
            inactiveDays: { type: 'integer', minimum: 1, maximum: 3650 },
            capDays: { type: 'integer', minimum: 1, maximum: 3650, default: 30 },
            intervalMinutes: { type: 'integer', minimum: 5, maximum: 525600, default: 1440 },
            quietHours: { type: ['object', 'null'], required: ['start', 'end'], additionalProperties: false, properties: { start: { type: 'integer', minimum: 0, maximum: 23 }, end: { type: 'integer', minimum: 0, maximum: 23 } } },
            maxPerRun: { type: 'integer', minimum: 1, maximum: 1000, default: 1000 },
            startAt: { type: 'string', format: 'date-time' },
          },
        },
        response: withErrors({ 201: envelopeSchema(anyObject), 422: { $ref: 'ErrorEnvelope#' } }),
      },
    },
    async (req, reply) => {
      const b = req.body;
      if (!(await templates.get(req.auth.accountId, b.templateId))) throw new ApiError('TEMPLATE_NOT_FOUND');
      try {
        await email.senderDomain(req.auth.accountId, b.from.toLowerCase());
      } catch (err) {
        throw new ApiError((err as { code: string }).code === 'DOMAIN_NOT_FOUND' ? 'SENDER_DOMAIN_UNKNOWN' : 'SENDER_DOMAIN_NOT_VERIFIED', { message: (err as Error).message });
      }
      const startAt = b.startAt ? Date.parse(b.startAt) : undefined;
      reply.code(201);
      return ok(req, 'EMAIL_SCHEDULE_CREATED', await schedules.create(req.auth.accountId, { ...b, startAt }, Date.now()));
    },
  );
  app.get('/v1/email/schedules', { config: { scope: 'email:manage' }, schema: { tags: ['email'], summary: 'List schedules', response: withErrors({ 200: envelopeSchema({ type: 'array', items: anyObject }) }) } }, async (req) =>
    ok(req, 'EMAIL_SCHEDULES', await schedules.list(req.auth.accountId)),
  );
  app.get<{ Params: { id: string } }>(
    '/v1/email/schedules/:id',
    { config: { scope: 'email:manage' }, schema: { tags: ['email'], summary: 'A schedule and its last 100 runs with counts', params: idParam, response: withErrors({ 200: envelopeSchema(anyObject) }) } },
    async (req) => {
      const s = await schedules.get(req.auth.accountId, req.params.id);
      if (!s) throw new ApiError('SCHEDULE_NOT_FOUND');
      return ok(req, 'EMAIL_SCHEDULE', s);
    },
  );
  app.delete<{ Params: { id: string } }>(
    '/v1/email/schedules/:id',
    { config: { scope: 'email:manage' }, schema: { tags: ['email'], summary: 'Delete a schedule', params: idParam, response: withErrors({ 200: envelopeSchema(anyObject) }) } },
    async (req) => {
      if (!(await schedules.remove(req.auth.accountId, req.params.id))) throw new ApiError('SCHEDULE_NOT_FOUND');
      return ok(req, 'EMAIL_SCHEDULE_DELETED', { id: req.params.id });
    },
  );
}
