import type { FastifyInstance } from 'fastify';
import { envelopeSchema, ok, withErrors } from '../../http/envelope.js';
import { ApiError } from '../../http/errors.js';
import { idempotencyHeaderSchema, idempotent, type IdempotencyStore } from '../../http/idempotency.js';
import { EMAIL_STATUSES } from './email-machine.js';
import { EmailSendError, type EmailService, type SendInput, type Stream, type SuppressionReason } from './email-service.js';
import { DOMAIN_PATTERN, type SendingDomains } from './sending-domains.js';
import type { TemplateStore } from './template-store.js';

export const MAX_RECIPIENTS = 50;
export const MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024;
export const MAX_PERSONALIZATIONS = 1000;
const SEND_BODY_LIMIT = 16 * 1024 * 1024;

export interface EmailRoutesDeps {
  email: EmailService;
  domains: SendingDomains;
  templates: TemplateStore;
  idempotency: IdempotencyStore;
  sendHorizonDays: number;
}

const email = { type: 'string', minLength: 3, maxLength: 254, pattern: '^[^\\s@<>]+@[^\\s@<>]+\\.[^\\s@<>]+$' } as const;
const addressList = { type: 'array', items: email, maxItems: MAX_RECIPIENTS } as const;
const anyObject = { type: 'object', additionalProperties: true } as const;
const idParam = { type: 'object', required: ['id'], properties: { id: { type: 'string', minLength: 1, maxLength: 64 } } } as const;

const contentProps = {
  subject: { type: 'string', minLength: 1, maxLength: 998, description: 'Handlebars variables allowed (strict)' },
  html: { type: 'string', 'x-ferry-redact': 'personal', maxLength: 5_000_000, description: 'sanitised (no scripts, no event attributes, http/https/mailto/tel links), CSS inlined' },
  text: { type: 'string', 'x-ferry-redact': 'personal', maxLength: 5_000_000, description: 'generated from html when absent' },
  templateId: { type: 'string', maxLength: 64, description: 'a template of the account (instead of html/text; subject optional)' },
  data: { ...anyObject, 'x-ferry-redact': 'personal', description: 'template variables; a variable the template uses and data lacks is TEMPLATE_RENDER_ERROR' },
} as const;

const commonProps = {
  from: {
    type: 'string',
    minLength: 3,
    maxLength: 512,
    description:
      'an address of a sending domain of the account: `news@acme.example`, or with a display name as SendGrid, Postmark and nodemailer take it, `Acme <news@acme.example>` or `"Acme, Inc." <news@acme.example>`',
  },
  fromName: { type: 'string', maxLength: 200, description: 'the display name (the same as one written in `from` is fine; a different one is VALIDATION_ERROR)' },
  replyTo: email,
  attachments: {
    type: 'array',
    maxItems: 50,
    items: {
      type: 'object',
      required: ['filename', 'content'],
      additionalProperties: false,
      properties: { filename: { type: 'string', minLength: 1, maxLength: 255 }, content: { type: 'string', 'x-ferry-redact': 'personal', description: 'base64' }, contentType: { type: 'string', maxLength: 255 } },
    },
    description: 'at most 10 MB in total after decoding',
  },
  headers: { type: 'object', 'x-ferry-redact': 'personal', additionalProperties: { type: 'string', maxLength: 2000 }, description: 'extra headers (X-…)' },
  tags: { type: 'array', items: { type: 'string', maxLength: 100 }, maxItems: 10 },
  metadata: anyObject,
  tracking: { type: 'object', additionalProperties: false, properties: { opens: { type: 'boolean' }, clicks: { type: 'boolean' } } },
  sendAt: { type: 'string', format: 'date-time' },
  stream: { type: 'string', enum: ['transactional', 'bulk'], description: 'default transactional' },
} as const;

const recipientsSchema = {
  type: 'array',
  items: {
    type: 'object',
    properties: { to: { type: 'string' }, messageId: { type: 'string' }, status: { type: 'string', enum: ['queued', 'dropped'] } },
  },
} as const;

type Common = {
  from: string;
  fromName?: string;
  replyTo?: string;
  attachments?: SendInput['attachments'];
  headers?: Record<string, string>;
  tags?: string[];
  metadata?: Record<string, unknown>;
  tracking?: { opens?: boolean; clicks?: boolean };
  sendAt?: string;
  stream?: Stream;
  subject?: string;
  html?: string;
  text?: string;
  templateId?: string;
  data?: Record<string, unknown>;
};
type SendBody = Common & { to: string[]; cc?: string[]; bcc?: string[] };
type BulkBody = Common & { personalizations: Array<{ to: string[]; cc?: string[]; data?: Record<string, unknown>; subject?: string }> };

const FORBIDDEN_HEADERS = /^(from|to|cc|bcc|subject|date|message-id|dkim-signature|return-path|mime-version|content-type|content-transfer-encoding|reply-to|sender)$/i;

function fail(field: string, message: string): ApiError {
  return new ApiError('VALIDATION_ERROR', { data: { errors: [{ field, message }] } });
}

function sendError(err: unknown): unknown {
  if (!(err instanceof EmailSendError)) return err;
  const code = { DOMAIN_NOT_FOUND: 'SENDER_DOMAIN_UNKNOWN', DOMAIN_NOT_VERIFIED: 'SENDER_DOMAIN_NOT_VERIFIED', TEMPLATE_NOT_FOUND: 'TEMPLATE_NOT_FOUND', TEMPLATE_RENDER_ERROR: 'TEMPLATE_RENDER_ERROR' } as const;
  return new ApiError(code[err.code], { message: err.message, data: { errors: [{ field: err.field, message: err.message }] } });
}

const BARE_ADDRESS = /^[^\s@<>"]+@[^\s@<>]+\.[^\s@<>]+$/;
// `Name <addr>` or `"Quoted, Name" <addr>` (backslash escapes inside the quotes), one address, no line breaks.
const NAMED_ADDRESS = /^(?:"((?:[^"\\\r\n]|\\[^\r\n])*)"|([^<>"\r\n]*?))\s*<([^\s@<>"]+@[^\s@<>]+\.[^\s@<>]+)>$/;

/** `from` as users of other email APIs write it: a bare address or `Name <address>`; null when it is neither. */
export function parseFrom(raw: string): { address: string; name: string | undefined } | null {
  const text = raw.trim();
  if (BARE_ADDRESS.test(text)) return { address: text, name: undefined };
  const m = NAMED_ADDRESS.exec(text);
  if (!m) return null;
  const name = (m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : m[2]).trim();
  return { address: m[3], name: name || undefined };
}

/** The checks a JSON schema cannot say; returns the send's common input. */
function common(b: Common, horizonDays: number): Omit<SendInput, 'to' | 'cc' | 'bcc'> {
  const from = parseFrom(b.from);
  if (!from) throw fail('from', 'must be an address (news@acme.example) or a name and an address (Acme <news@acme.example>)');
  if (from.name !== undefined && b.fromName !== undefined && from.name !== b.fromName.trim()) {
    throw fail('fromName', `differs from the name in from (${from.name}); give the name once`);
  }
  if (!b.templateId && !b.html && !b.text) throw fail('html', 'give html and/or text, or a templateId');
  if (!b.templateId && !b.subject) throw fail('subject', 'a subject is required without a template');
  let total = 0;
  for (const a of b.attachments ?? []) {
    if (!/^[A-Za-z0-9+/\r\n]*={0,2}\s*$/.test(a.content)) throw fail('attachments', `${a.filename}: content is not base64`);
    total += Buffer.byteLength(a.content, 'base64');
  }
  if (total > MAX_ATTACHMENT_BYTES) throw new ApiError('ATTACHMENTS_TOO_LARGE', { data: { bytes: total, limit: MAX_ATTACHMENT_BYTES } });
  for (const h of Object.keys(b.headers ?? {})) {
    if (FORBIDDEN_HEADERS.test(h) || !/^[A-Za-z0-9-]{1,76}$/.test(h)) throw fail('headers', `${h} may not be set this way`);
  }
  for (const v of Object.values(b.headers ?? {})) if (/[\r\n]/.test(v)) throw fail('headers', 'header values are one line');
  let sendAt: number | undefined;
  if (b.sendAt !== undefined) {
    sendAt = Date.parse(b.sendAt);
    if (Number.isNaN(sendAt)) throw fail('sendAt', 'must be an ISO 8601 date-time');
    if (sendAt > Date.now() + horizonDays * 86_400_000) throw fail('sendAt', `must be within ${horizonDays} days`);
  }
  return {
    from: from.address.toLowerCase(),
    fromName: from.name ?? b.fromName,
    replyTo: b.replyTo,
    subject: b.subject,
    html: b.html,
    text: b.text,
    templateId: b.templateId,
    data: b.data,
    attachments: b.attachments ?? [],
    headers: b.headers ?? {},
    tags: b.tags ?? [],
    metadata: b.metadata ?? {},
    tracking: { opens: b.tracking?.opens ?? false, clicks: b.tracking?.clicks ?? false },
    sendAt,
    stream: b.stream ?? 'transactional',
  };
}

/** The email product's REST API under /v1/email (docs/email.md). */
export async function emailRoutes(app: FastifyInstance, deps: EmailRoutesDeps): Promise<void> {
  const { email: svc, domains, templates } = deps;
  const idemHeaders = { type: 'object', properties: { 'idempotency-key': idempotencyHeaderSchema } } as const;

  app.post<{ Body: SendBody }>(
    '/v1/email/send',
    {
      bodyLimit: SEND_BODY_LIMIT,
      config: { scope: 'email:send' },
      schema: {
        tags: ['email'],
        summary: 'Send an email',
        description:
          `One message per recipient (to, cc, bcc together at most ${MAX_RECIPIENTS}), each with its own messageId, status queued ` +
          `(or dropped when the recipient is suppressed for the stream: nothing is sent). from must be an address of a sending domain of ` +
          `the account (SENDER_DOMAIN_UNKNOWN; SENDER_DOMAIN_NOT_VERIFIED when email.requireVerifiedDomain is on and its DKIM record is ` +
          `not published). html and/or text, or templateId + data (a missing variable: TEMPLATE_RENDER_ERROR). Attachments at most 10 MB ` +
          `decoded (ATTACHMENTS_TOO_LARGE). Idempotency-Key honoured.`,
        headers: idemHeaders,
        body: {
          type: 'object',
          required: ['from', 'to'],
          additionalProperties: false,
          properties: { ...commonProps, ...contentProps, to: { ...addressList, minItems: 1 }, cc: addressList, bcc: addressList },
        },
        response: withErrors({ 200: envelopeSchema({ type: 'object', properties: { sendId: { type: 'string' }, messages: recipientsSchema } }, 'Queued (code EMAIL_QUEUED)'), 422: { $ref: 'ErrorEnvelope#' } }),
      },
    },
    async (req, reply) => {
      const b = req.body;
      const n = b.to.length + (b.cc?.length ?? 0) + (b.bcc?.length ?? 0);
      if (n > MAX_RECIPIENTS) throw fail('to', `at most ${MAX_RECIPIENTS} recipients in to, cc and bcc together`);
      const input: SendInput = { ...common(b, deps.sendHorizonDays), to: b.to, cc: b.cc ?? [], bcc: b.bcc ?? [] };
      return idempotent(req, reply, deps.idempotency, async () => {
        try {
          const r = await svc.send(req.auth.accountId, input);
          return ok(req, 'EMAIL_QUEUED', { sendId: r.sendId, messages: r.recipients }, 'Email queued');
        } catch (err) {
          throw sendError(err);
        }
      });
    },
  );

  app.post<{ Body: BulkBody }>(
    '/v1/email/bulk',
    {
      bodyLimit: SEND_BODY_LIMIT,
      config: { scope: 'email:send' },
      schema: {
        tags: ['email'],
        summary: 'Send one template or body to up to 1,000 personalizations',
        description: `Each personalization has its own to (and cc) and data, rendered on its own. Default stream bulk (List-Unsubscribe headers). Idempotency-Key honoured.`,
        headers: idemHeaders,
        body: {
          type: 'object',
          required: ['from', 'personalizations'],
          additionalProperties: false,
          properties: {
            ...commonProps,
            ...contentProps,
            personalizations: {
              type: 'array',
              minItems: 1,
              maxItems: MAX_PERSONALIZATIONS,
              items: {
                type: 'object',
                required: ['to'],
                additionalProperties: false,
                properties: { to: { ...addressList, minItems: 1 }, cc: addressList, data: { ...anyObject, 'x-ferry-redact': 'personal' }, subject: contentProps.subject },
              },
            },
          },
        },
        response: withErrors({
          200: envelopeSchema({ type: 'object', properties: { sends: { type: 'array', items: { type: 'object', properties: { sendId: { type: 'string' }, messages: recipientsSchema } } } } }, 'Queued (code EMAIL_QUEUED)'),
          422: { $ref: 'ErrorEnvelope#' },
        }),
      },
    },
    async (req, reply) => {
      const b = req.body;
      const base = common({ ...b, stream: b.stream ?? 'bulk' }, deps.sendHorizonDays);
      return idempotent(req, reply, deps.idempotency, async () => {
        try {
          const r = await svc.bulk(req.auth.accountId, base, b.personalizations);
          return ok(req, 'EMAIL_QUEUED', { sends: r.map((s) => ({ sendId: s.sendId, messages: s.recipients })) }, 'Email queued');
        } catch (err) {
          throw sendError(err);
        }
      });
    },
  );

  app.get<{ Params: { id: string } }>(
    '/v1/email/messages/:id',
    {
      config: { scope: 'email:read' },
      schema: {
        tags: ['email'],
        summary: 'Status and history of one message (one recipient)',
        description: `Statuses: ${EMAIL_STATUSES.join(', ')}. history lists every state change, attempt (with the SMTP reply), report and engagement.`,
        params: idParam,
        response: withErrors({ 200: envelopeSchema(anyObject, 'The message (code EMAIL_MESSAGE)') }),
      },
    },
    async (req) => {
      const m = await svc.message(req.auth.accountId, req.params.id);
      if (!m) throw new ApiError('EMAIL_NOT_FOUND');
      return ok(req, 'EMAIL_MESSAGE', m);
    },
  );

  // Sending domains
  app.post<{ Body: { domain: string } }>(
    '/v1/email/domains',
    {
      config: { scope: 'email:manage' },
      schema: {
        tags: ['email'],
        summary: 'Add a sending domain',
        description: 'Generates its DKIM key (RSA 2048; the private key stays encrypted in Ferry) and answers the DNS TXT records to publish: DKIM, SPF, return path. Adding a domain again answers it as it is.',
        body: { type: 'object', required: ['domain'], additionalProperties: false, properties: { domain: { type: 'string', minLength: 3, maxLength: 253 } } },
        response: withErrors({ 200: envelopeSchema(anyObject, 'The domain (code EMAIL_DOMAIN)'), 201: envelopeSchema(anyObject, 'Created (code EMAIL_DOMAIN_CREATED)') }),
      },
    },
    async (req, reply) => {
      const domain = req.body.domain.toLowerCase().replace(/\.$/, '');
      if (!DOMAIN_PATTERN.test(domain)) throw fail('domain', 'not a domain name');
      const r = await domains.create(req.auth.accountId, domain);
      if (r.created) reply.code(201);
      return ok(req, r.created ? 'EMAIL_DOMAIN_CREATED' : 'EMAIL_DOMAIN', r.domain);
    },
  );

  app.get('/v1/email/domains', { config: { scope: 'email:manage' }, schema: { tags: ['email'], summary: 'List sending domains', response: withErrors({ 200: envelopeSchema({ type: 'array', items: anyObject }) }) } }, async (req) =>
    ok(req, 'EMAIL_DOMAINS', await domains.list(req.auth.accountId)),
  );

  app.get<{ Params: { id: string } }>(
    '/v1/email/domains/:id',
    {
      config: { scope: 'email:manage' },
      schema: { tags: ['email'], summary: 'A sending domain, its records looked up in DNS now', params: idParam, response: withErrors({ 200: envelopeSchema(anyObject, 'The domain (code EMAIL_DOMAIN)') }) },
    },
    async (req) => {
      const d = await domains.check(req.auth.accountId, req.params.id);
      if (!d) throw new ApiError('EMAIL_DOMAIN_NOT_FOUND');
      return ok(req, 'EMAIL_DOMAIN', d);
    },
  );

  app.delete<{ Params: { id: string } }>(
    '/v1/email/domains/:id',
    { config: { scope: 'email:manage' }, schema: { tags: ['email'], summary: 'Remove a sending domain and its key', params: idParam, response: withErrors({ 200: envelopeSchema(anyObject) }) } },
    async (req) => {
      if (!(await domains.remove(req.auth.accountId, req.params.id))) throw new ApiError('EMAIL_DOMAIN_NOT_FOUND');
      return ok(req, 'EMAIL_DOMAIN_DELETED', { id: req.params.id });
    },
  );

  // Suppressions
  app.get<{ Querystring: { stream?: Stream; limit?: string; after?: string } }>(
    '/v1/email/suppressions',
    {
      config: { scope: 'email:manage' },
      schema: {
        tags: ['email'],
        summary: 'Suppressed recipients',
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { stream: { type: 'string', enum: ['transactional', 'bulk'] }, limit: { type: 'string', pattern: '^(?:[1-9][0-9]{0,2}|1000)$', description: 'rows, 1–1000 (default 100)' }, after: { type: 'string', description: 'the last address of the previous page' } },
        },
        response: withErrors({ 200: envelopeSchema({ type: 'array', items: anyObject }) }),
      },
    },
    async (req) => ok(req, 'EMAIL_SUPPRESSIONS', await svc.suppressions(req.auth.accountId, req.query.stream, req.query.limit ? Number(req.query.limit) : 100, req.query.after)),
  );

  app.post<{ Body: { address: string; stream?: Stream | 'all'; reason?: SuppressionReason } }>(
    '/v1/email/suppressions',
    {
      config: { scope: 'email:manage' },
      schema: {
        tags: ['email'],
        summary: 'Suppress a recipient (reason manual by default)',
        body: {
          type: 'object',
          required: ['address'],
          additionalProperties: false,
          properties: { address: email, stream: { type: 'string', enum: ['transactional', 'bulk', 'all'], default: 'all' }, reason: { type: 'string', enum: ['hard_bounce', 'complaint', 'unsubscribe', 'manual'], default: 'manual' } },
        },
        response: withErrors({ 200: envelopeSchema(anyObject) }),
      },
    },
    async (req) => {
      const streams: Stream[] = !req.body.stream || req.body.stream === 'all' ? ['transactional', 'bulk'] : [req.body.stream];
      for (const s of streams) await svc.suppress(req.auth.accountId, s, req.body.address, req.body.reason ?? 'manual', 'api');
      return ok(req, 'EMAIL_SUPPRESSED', { address: req.body.address.toLowerCase(), streams });
    },
  );

  app.delete<{ Params: { address: string }; Querystring: { stream?: Stream } }>(
    '/v1/email/suppressions/:address',
    {
      config: { scope: 'email:manage' },
      schema: {
        tags: ['email'],
        summary: 'Take a recipient off the suppression list (one stream, or both)',
        params: { type: 'object', required: ['address'], properties: { address: { type: 'string', maxLength: 254 } } },
        querystring: { type: 'object', additionalProperties: false, properties: { stream: { type: 'string', enum: ['transactional', 'bulk'] } } },
        response: withErrors({ 200: envelopeSchema(anyObject) }),
      },
    },
    async (req) => {
      const n = await svc.unsuppress(req.auth.accountId, req.params.address, req.query.stream);
      if (!n) throw new ApiError('SUPPRESSION_NOT_FOUND');
      return ok(req, 'EMAIL_UNSUPPRESSED', { address: req.params.address.toLowerCase(), removed: n });
    },
  );

  // Templates
  const templateBody = {
    type: 'object',
    additionalProperties: false,
    properties: { name: { type: 'string', minLength: 1, maxLength: 200 }, subject: contentProps.subject, html: { ...contentProps.html, type: ['string', 'null'] }, text: { ...contentProps.text, type: ['string', 'null'] } },
  } as const;
  type TemplateBody = { name?: string; subject?: string; html?: string | null; text?: string | null };
  /** A template that does not compile is refused when stored, not at send time. */
  const compiles = (t: TemplateBody) => {
    try {
      svc.checkTemplate(t);
    } catch (err) {
      throw new ApiError('TEMPLATE_RENDER_ERROR', { message: (err as Error).message });
    }
  };

  app.post<{ Body: TemplateBody }>(
    '/v1/email/templates',
    {
      config: { scope: 'email:manage' },
      schema: { tags: ['email'], summary: 'Create a template (Handlebars)', body: { ...templateBody, required: ['name', 'subject'] }, response: withErrors({ 201: envelopeSchema(anyObject), 422: { $ref: 'ErrorEnvelope#' } }) },
    },
    async (req, reply) => {
      if (!req.body.html && !req.body.text) throw fail('html', 'give html and/or text');
      compiles(req.body);
      reply.code(201);
      return ok(req, 'EMAIL_TEMPLATE_CREATED', await templates.create(req.auth.accountId, req.body as Required<Pick<TemplateBody, 'name' | 'subject'>>));
    },
  );
  app.get('/v1/email/templates', { config: { scope: 'email:manage' }, schema: { tags: ['email'], summary: 'List templates', response: withErrors({ 200: envelopeSchema({ type: 'array', items: anyObject }) }) } }, async (req) =>
    ok(req, 'EMAIL_TEMPLATES', await templates.list(req.auth.accountId)),
  );
  app.get<{ Params: { id: string } }>(
    '/v1/email/templates/:id',
    { config: { scope: 'email:manage' }, schema: { tags: ['email'], summary: 'A template', params: idParam, response: withErrors({ 200: envelopeSchema(anyObject) }) } },
    async (req) => {
      const t = await templates.get(req.auth.accountId, req.params.id);
      if (!t) throw new ApiError('TEMPLATE_NOT_FOUND');
      return ok(req, 'EMAIL_TEMPLATE', t);
    },
  );
  app.put<{ Params: { id: string }; Body: TemplateBody }>(
    '/v1/email/templates/:id',
    { config: { scope: 'email:manage' }, schema: { tags: ['email'], summary: 'Change a template', params: idParam, body: templateBody, response: withErrors({ 200: envelopeSchema(anyObject), 422: { $ref: 'ErrorEnvelope#' } }) } },
    async (req) => {
      compiles(req.body);
      const t = await templates.update(req.auth.accountId, req.params.id, req.body);
      if (!t) throw new ApiError('TEMPLATE_NOT_FOUND');
      return ok(req, 'EMAIL_TEMPLATE', t);
    },
  );
  app.delete<{ Params: { id: string } }>(
    '/v1/email/templates/:id',
    { config: { scope: 'email:manage' }, schema: { tags: ['email'], summary: 'Delete a template', params: idParam, response: withErrors({ 200: envelopeSchema(anyObject) }) } },
    async (req) => {
      if (!(await templates.remove(req.auth.accountId, req.params.id))) throw new ApiError('TEMPLATE_NOT_FOUND');
      return ok(req, 'EMAIL_TEMPLATE_DELETED', { id: req.params.id });
    },
  );
  app.post<{ Params: { id: string }; Body: { data?: Record<string, unknown> } }>(
    '/v1/email/templates/:id/preview',
    {
      config: { scope: 'email:manage' },
      schema: {
        tags: ['email'],
        summary: 'Render a template with data',
        description: 'The subject, sanitised and CSS-inlined html, and text (generated from the html when the template has none) a send would carry.',
        params: idParam,
        body: { type: 'object', additionalProperties: false, properties: { data: { ...anyObject, 'x-ferry-redact': 'personal' } } },
        response: withErrors({ 200: envelopeSchema({ type: 'object', properties: { subject: { type: 'string' }, html: { type: ['string', 'null'] }, text: { type: ['string', 'null'] } } }), 422: { $ref: 'ErrorEnvelope#' } }),
      },
    },
    async (req) => {
      try {
        const r = await svc.compose(req.auth.accountId, { templateId: req.params.id, data: req.body?.data ?? {} });
        return ok(req, 'EMAIL_TEMPLATE_PREVIEW', { subject: r.subject, html: r.html ?? null, text: r.text ?? null });
      } catch (err) {
        throw sendError(err);
      }
    },
  );
}
