import type { FastifyInstance } from 'fastify';
import { fromMicros } from '../../accounts/money.js';
import { envelopeSchema, ok, withErrors } from '../../http/envelope.js';
import { ApiError, invalidField, type ErrorCode } from '../../http/errors.js';
import { idempotencyHeaderSchema, idempotent, type IdempotencyStore } from '../../http/idempotency.js';
import type { Ledger } from '../../ledger/ledger.js';
import { FINAL_STATUSES, type MessageEvent, type MessageRecord, type MessageStatus } from '../../ledger/types.js';
import type { Db } from '../../store/types.js';
import { newId } from '../../util/ids.js';
import { BatchStore } from './batch-store.js';
import { isValidSender, SENDER_RULE } from '../../messaging/sender.js';
import { MAX_MESSAGE_CHARS, SMS_ERROR_HTTP, smsHttpError } from '../../messaging/sms-http-errors.js';
import type { AcceptedSms, SmsApi, SmsSubmission } from '../../messaging/types.js';

export interface SmsRoutesDeps {
  sms: SmsApi;
  ledger: Ledger;
  idempotency: IdempotencyStore;
  db: Db;
  /**
   * Reads that tolerate replica lag (database.readUrl): the status of a message, a bulk request's summary and the
   * inbound list. A message or batch the replica has not seen yet is read on the primary. Null or absent: `db`.
   */
  replica?: { db: Db; ledger: Pick<Ledger, 'get' | 'history'> } | null;
  /** Show upstream ids in status and inbound reads (operators' own deployments); hidden from customers otherwise. */
  showUpstreams: boolean;
  /** How far ahead scheduledAt may be (default 30 days). */
  scheduleHorizonDays?: number;
}

/** Spec §8: body limits (the sender rule is in sender.ts, the message length in src/messaging/sms-http-errors.ts); enforced here so they get their own codes (spec §4 rule 1). */
export const MAX_BULK_ITEMS = 10_000;
const MAX_REFERENCE_CHARS = 100;

async function viaSms<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw smsHttpError(err);
  }
}

/** Characters as people count them: a surrogate pair (emoji) is one. */
function charCount(s: string): number {
  if (s.length <= MAX_MESSAGE_CHARS) return s.length;
  return s.length - (s.match(/[\uD800-\uDBFF][\uDC00-\uDFFF]/g)?.length ?? 0);
}

function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

function toMs(v: unknown): number {
  return v instanceof Date ? v.getTime() : new Date(String(v)).getTime();
}

const ERROR_REF = { $ref: 'ErrorEnvelope#' } as const;

/** The standard errors plus those of sending: 402 credit, 409 idempotency/resend, 422 key reuse / no route. */
function sendErrors(success: Record<number, unknown>): Record<string, unknown> {
  return { ...withErrors(success), 402: ERROR_REF, 409: ERROR_REF, 422: ERROR_REF };
}

const nullableString = { type: ['string', 'null'] } as const;
const nullableTime = { type: ['string', 'null'], format: 'date-time' } as const;

const acceptedSchema = {
  type: 'object',
  properties: {
    messageId: { type: 'string', description: 'Ferry message id, prefix msg_' },
    channel: { type: 'string', enum: ['sms'] },
    status: { type: 'string', enum: ['queued', 'scheduled'] },
    to: { type: 'string', description: 'recipient in international form without a plus sign' },
    from: { type: 'string' },
    segments: { type: 'integer', description: 'SMS parts the message takes' },
    encoding: { type: 'string', description: 'GSM-7 or UCS-2' },
    cost: { type: 'number', description: 'debited, in the account currency' },
    currency: { type: 'string' },
    delivery: {
      type: 'object',
      properties: {
        status: { type: 'string', enum: ['SENT'], description: 'accepted for delivery' },
        submittedAt: { type: 'string', format: 'date-time', description: 'when Ferry accepted it' },
      },
    },
    billing: {
      type: 'object',
      properties: { units: { type: 'integer', description: 'billed segments' }, currency: { type: 'string' }, unitCost: { type: 'number' } },
    },
    reference: nullableString,
    scheduledAt: nullableTime,
    resendOf: { ...nullableString, description: 'resend only: the message this one repeats' },
  },
} as const;

function acceptedData(a: AcceptedSms): Record<string, unknown> {
  return {
    messageId: a.messageId,
    channel: 'sms',
    status: a.status,
    to: a.destination,
    from: a.source,
    segments: a.segments,
    encoding: a.encoding,
    cost: fromMicros(a.costMicros),
    currency: a.currency,
    delivery: { status: 'SENT', submittedAt: new Date(a.acceptedAt).toISOString() },
    billing: { units: a.segments, currency: a.currency, unitCost: fromMicros(a.unitCostMicros) },
    reference: a.reference,
    scheduledAt: iso(a.scheduledAt),
  };
}

interface SendBody {
  to: string;
  from: string;
  message: string;
  reference?: string;
  scheduledAt?: string;
}

interface BulkBody {
  messages?: unknown[];
  to?: unknown[];
  message?: string;
  from?: string;
  reference?: string;
}

type ItemCheck = { ok: true; sub: SmsSubmission } | { ok: false; code: ErrorCode; message: string };

const BULK_ITEM_KEYS = new Set(['to', 'message', 'from', 'reference']);

/**
 * One bulk item checked by hand (ajv per item would dominate a 10,000-item request); the same rules and codes as a
 * single send. `item` is the raw array element; `top` holds the request-level defaults.
 */
function checkBulkItem(item: unknown, top: BulkBody, base: Pick<SmsSubmission, 'accountId' | 'allowedRecipients' | 'batchId'>, listForm: boolean): ItemCheck {
  let to: unknown;
  let message: unknown;
  let from: unknown = top.from;
  let reference: unknown = top.reference;
  if (listForm) {
    to = item;
    message = top.message;
  } else {
    if (item === null || typeof item !== 'object' || Array.isArray(item)) return { ok: false, code: 'VALIDATION_ERROR', message: 'item must be an object' };
    const o = item as Record<string, unknown>;
    for (const k in o) if (!BULK_ITEM_KEYS.has(k)) return { ok: false, code: 'VALIDATION_ERROR', message: `${k}: unknown field` };
    to = o.to;
    message = o.message;
    if (o.from !== undefined) from = o.from;
    if (o.reference !== undefined) reference = o.reference;
  }
  if (typeof to !== 'string' || !to) return { ok: false, code: 'VALIDATION_ERROR', message: 'to: a non-empty string is required' };
  if (typeof message !== 'string' || !message) return { ok: false, code: 'VALIDATION_ERROR', message: 'message: a non-empty string is required' };
  if (charCount(message) > MAX_MESSAGE_CHARS) return { ok: false, code: 'MESSAGE_TOO_LONG', message: `message: at most ${MAX_MESSAGE_CHARS} characters` };
  if (typeof from !== 'string' || !from) return { ok: false, code: 'INVALID_SENDER_ID', message: 'from: a sender ID is required (on the item or the request)' };
  if (!isValidSender(from)) return { ok: false, code: 'INVALID_SENDER_ID', message: `from: not a valid sender ID: ${SENDER_RULE}` };
  if (reference !== undefined && (typeof reference !== 'string' || reference.length > MAX_REFERENCE_CHARS)) {
    return { ok: false, code: 'VALIDATION_ERROR', message: `reference: a string of at most ${MAX_REFERENCE_CHARS} characters` };
  }
  return {
    ok: true,
    sub: { ...base, ingress: 'rest', source: from, destination: to, text: message, registeredDelivery: 1, reference: (reference as string | undefined) ?? null },
  };
}

/** History detail without upstream names, unless the deployment shows them. */
function publicDetail(detail: Record<string, unknown> | null, showUpstreams: boolean): Record<string, unknown> | null {
  if (!detail || showUpstreams) return detail;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(detail)) if (!k.startsWith('upstream')) out[k] = v;
  return out;
}

const ALL_STATUSES: readonly MessageStatus[] = ['queued', 'scheduled', 'submitted', 'delivered', 'undelivered', 'expired', 'rejected', 'failed', 'cancelled'];

/** Opaque keyset cursor of the inbound list: received_at in microseconds and the id, newest first. */
function encodeCursor(us: string | number, id: string): string {
  return Buffer.from(`${us}.${id}`).toString('base64url');
}

function decodeCursor(s: string): { us: string; id: string } {
  const raw = Buffer.from(s, 'base64url').toString('utf8');
  const dot = raw.indexOf('.');
  const us = raw.slice(0, dot);
  const id = raw.slice(dot + 1);
  if (dot <= 0 || !/^\d{1,17}$/.test(us) || !id) throw invalidField('querystring.after', 'not a cursor this API returned');
  return { us, id };
}

/**
 * The SMS channel's REST API under /v1: send, bulk, status, batch summary, resend and inbound (MO) messages.
 * Every write goes through the SmsApi (the same rules as SMPP); reads come from the ledger.
 */
export async function smsRoutes(app: FastifyInstance, deps: SmsRoutesDeps): Promise<void> {
  const horizonDays = deps.scheduleHorizonDays ?? 30;
  const batches = new BatchStore(deps.db);
  const replicaBatches = deps.replica ? new BatchStore(deps.replica.db) : null;
  const horizonMs = horizonDays * 86_400_000;
  const idemHeaders = { type: 'object', properties: { 'idempotency-key': idempotencyHeaderSchema } } as const;

  const scheduleOf = (raw: string | undefined): number | null => {
    if (raw === undefined) return null;
    const at = Date.parse(raw);
    const now = Date.now();
    if (Number.isNaN(at)) throw invalidField('scheduledAt', 'must be an ISO 8601 date-time');
    if (at <= now) throw invalidField('scheduledAt', 'must be in the future');
    if (at > now + horizonMs) throw invalidField('scheduledAt', `must be within ${horizonDays} days`);
    return at;
  };

  app.post<{ Body: SendBody }>(
    '/v1/sms/send',
    {
      config: { scope: 'sms:send' },
      schema: {
        tags: ['sms'],
        summary: 'Send one SMS',
        description:
          `The recipient may be local (read in the account's default country) or international; the response gives it in international form. ` +
          `A sender ID must be ${SENDER_RULE}; any other is refused with INVALID_SENDER_ID. A message longer than ${MAX_MESSAGE_CHARS} ` +
          `characters (or more than 10 segments) is refused with MESSAGE_TOO_LONG. data carries both published result shapes.`,
        headers: idemHeaders,
        body: {
          type: 'object',
          required: ['to', 'from', 'message'],
          additionalProperties: false,
          properties: {
            to: { type: 'string', minLength: 1, maxLength: 32, description: 'recipient MSISDN, local format or E.164' },
            from: { type: 'string', minLength: 1, description: `sender ID: ${SENDER_RULE} (else INVALID_SENDER_ID)` },
            message: { type: 'string', 'x-ferry-redact': 'personal', minLength: 1, description: `body, at most ${MAX_MESSAGE_CHARS} characters (else MESSAGE_TOO_LONG)` },
            reference: { type: 'string', maxLength: MAX_REFERENCE_CHARS, description: "the caller's correlation id" },
            scheduledAt: { type: 'string', format: 'date-time', description: `ISO 8601; in the future and within ${horizonDays} days` },
          },
        },
        response: sendErrors({ 200: envelopeSchema(acceptedSchema, 'Accepted (code SMS_SENT)') }),
      },
    },
    async (req, reply) => {
      const b = req.body;
      if (!isValidSender(b.from)) throw new ApiError('INVALID_SENDER_ID', { message: `The sender ID is not valid: it must be ${SENDER_RULE}` });
      if (charCount(b.message) > MAX_MESSAGE_CHARS) throw new ApiError('MESSAGE_TOO_LONG', { message: `The message must be at most ${MAX_MESSAGE_CHARS} characters` });
      const scheduledAt = scheduleOf(b.scheduledAt);
      const sub: SmsSubmission = {
        accountId: req.auth.accountId,
        ingress: 'rest',
        source: b.from,
        destination: b.to,
        text: b.message,
        registeredDelivery: 1,
        reference: b.reference ?? null,
        scheduledAt,
        allowedRecipients: req.auth.allowedRecipients,
      };
      return idempotent(req, reply, deps.idempotency, async () => {
        const a = await viaSms(() => deps.sms.submit(sub));
        return ok(req, 'SMS_SENT', acceptedData(a), a.status === 'scheduled' ? 'Message scheduled' : 'Message accepted for delivery');
      });
    },
  );

  app.post<{ Body: BulkBody }>(
    '/v1/sms/bulk',
    {
      config: { scope: 'sms:send' },
      schema: {
        tags: ['sms'],
        summary: 'Send up to 10,000 SMS in one request',
        description:
          'Either `messages` (items `{to, message, from?, reference?}`; `from` and `reference` at the top level apply to items without ' +
          'their own) or `to` (a list of recipients) with one `message` and `from`. Every item is checked on its own with the same codes ' +
          'as a single send; an item that fails is reported in `results` and does not fail the request. The accepted items are debited ' +
          'and committed together: a balance short of their total, or storage being unavailable, refuses the whole request. When no ' +
          'item is accepted the request is refused with BULK_REJECTED (422, success false): nothing is stored or debited, and data ' +
          'holds total, accepted (0), rejected and the per-item results, so the reason of each is known. GET /sms/batches/{batchId} ' +
          'reports the same total, accepted and rejected as this answer.',
        headers: idemHeaders,
        body: {
          type: 'object',
          additionalProperties: false,
          properties: {
            // Items are checked by the handler, so a bad item is one rejected result, not a failed request.
            messages: {
              type: 'array',
              minItems: 1,
              maxItems: MAX_BULK_ITEMS,
              items: { description: 'an object {to: string, message: string, from?: string, reference?: string}' },
            },
            to: { type: 'array', minItems: 1, maxItems: MAX_BULK_ITEMS, items: { description: 'a recipient (string)' } },
            message: { type: 'string', 'x-ferry-redact': 'personal', minLength: 1, description: 'with `to`: the text sent to every recipient' },
            from: { type: 'string', minLength: 1, description: `sender ID for every item without its own: ${SENDER_RULE}` },
            reference: { type: 'string', maxLength: MAX_REFERENCE_CHARS, description: 'reference for every item without its own' },
          },
        },
        response: sendErrors({
          200: envelopeSchema(
            {
              type: 'object',
              properties: {
                batchId: { type: 'string', description: 'prefix bat_; GET /sms/batches/{batchId} summarises it' },
                total: { type: 'integer' },
                accepted: { type: 'integer' },
                rejected: { type: 'integer' },
                cost: { type: 'number', description: 'debited for the accepted items' },
                currency: { type: 'string' },
                results: {
                  type: 'array',
                  description: 'one per item, in request order',
                  items: {
                    type: 'object',
                    properties: {
                      index: { type: 'integer' },
                      status: { type: 'string', enum: ['accepted', 'rejected'] },
                      messageId: { type: 'string' },
                      to: { type: 'string' },
                      segments: { type: 'integer' },
                      cost: { type: 'number' },
                      code: { type: 'string', description: 'rejected: the error code a single send would get' },
                      message: { type: 'string' },
                    },
                  },
                },
              },
            },
            'Processed (code SMS_BATCH_ACCEPTED), including item-level rejections',
          ),
        }),
      },
    },
    async (req, reply) => {
      const b = req.body;
      const listForm = b.to !== undefined;
      if (listForm === (b.messages !== undefined)) throw invalidField('messages', 'send either messages, or to with message');
      if (listForm && b.message === undefined) throw invalidField('message', 'required with to');
      if (!listForm && b.message !== undefined) throw invalidField('message', 'not allowed with messages: give each item its message');
      const raw = (listForm ? b.to : b.messages)!;
      const batchId = newId('bat_');
      const base = { accountId: req.auth.accountId, allowedRecipients: req.auth.allowedRecipients, batchId };
      const results: Record<string, unknown>[] = new Array(raw.length);
      const subs: SmsSubmission[] = [];
      const origin: number[] = [];
      for (let i = 0; i < raw.length; i++) {
        const c = checkBulkItem(raw[i], b, base, listForm);
        if (c.ok) {
          subs.push(c.sub);
          origin.push(i);
        } else {
          results[i] = { index: i, status: 'rejected', code: c.code, message: c.message };
        }
      }
      return idempotent(req, reply, deps.idempotency, async () => {
        let accepted = 0;
        let costMicros = 0;
        let currency = req.auth.currency;
        if (subs.length) {
          const res = await viaSms(() => deps.sms.submitMany(subs, { batchId }));
          accepted = res.accepted;
          costMicros = res.costMicros;
          currency = res.currency;
          for (const r of res.results) {
            const index = origin[r.index];
            if (r.ok) {
              const a = r.accepted;
              results[index] = { index, status: 'accepted', messageId: a.messageId, to: a.destination, segments: a.segments, cost: fromMicros(a.costMicros) };
            } else {
              const map = SMS_ERROR_HTTP[r.code];
              results[index] = { index, status: 'rejected', code: map.code, message: map.field ? `${map.field}: ${r.message}` : r.message };
            }
          }
        }
        const total = raw.length;
        const rejected = total - accepted;
        if (accepted === 0) {
          // Nothing was stored or debited: a refusal, which still says why each item failed.
          throw new ApiError('BULK_REJECTED', {
            message: `None of the ${total} messages was accepted; data.results gives the reason of each`,
            data: { total, accepted, rejected, results },
          });
        }
        // The messages are committed: a failure to record the totals must not turn that into an error the client
        // would retry (and send twice). The batch then reads back from its messages alone (rejected: null).
        await batches.record({ id: batchId, accountId: req.auth.accountId, total, accepted, rejected }).catch((err: unknown) => {
          req.log.warn({ err: (err as Error).message, batchId }, 'bulk totals not recorded');
        });
        const data = { batchId, total, accepted, rejected, cost: fromMicros(costMicros), currency, results };
        return ok(req, 'SMS_BATCH_ACCEPTED', data, `${accepted} of ${total} messages accepted`);
      });
    },
  );

  const statusParams = { type: 'object', required: ['messageId'], properties: { messageId: { type: 'string', minLength: 1, maxLength: 100 } } } as const;

  app.get<{ Params: { messageId: string } }>(
    '/v1/sms/status/:messageId',
    {
      config: { scope: 'sms:read' },
      schema: {
        tags: ['sms'],
        summary: 'Delivery status and history of one message',
        description: 'Statuses: queued, scheduled, submitted, delivered, undelivered, expired, rejected, failed, cancelled. Another account\'s id is MESSAGE_NOT_FOUND.',
        params: statusParams,
        response: withErrors({
          200: envelopeSchema({
            type: 'object',
            properties: {
              messageId: { type: 'string' },
              channel: { type: 'string' },
              status: { type: 'string', enum: ALL_STATUSES },
              to: { type: 'string' },
              from: { type: 'string' },
              reference: nullableString,
              segments: { type: 'integer' },
              encoding: { type: 'string' },
              cost: { type: 'number' },
              currency: { type: 'string' },
              createdAt: { type: 'string', format: 'date-time' },
              scheduledAt: nullableTime,
              submittedAt: { ...nullableTime, description: 'first handed to an upstream' },
              finalAt: nullableTime,
              error: { ...nullableString, description: "the upstream's error or Ferry's reason (e.g. MAX_ATTEMPTS, NO_ROUTE)" },
              route: { ...nullableString, description: 'routing rule id' },
              upstream: { ...nullableString, description: 'present only where the deployment shows upstreams' },
              attempts: { type: 'integer' },
              resendOf: nullableString,
              resends: { type: 'array', items: { type: 'string' }, description: 'ids of the resends of this message' },
              batchId: nullableString,
              history: {
                type: 'array',
                items: {
                  type: 'object',
                  properties: {
                    status: { type: 'string' },
                    at: { type: 'string', format: 'date-time' },
                    detail: { type: ['object', 'null'], additionalProperties: true },
                  },
                },
              },
            },
          }),
        }),
      },
    },
    async (req) => {
      // The replica's view when it has the message (it may lag); one sent a moment ago is read on the primary.
      const seen = deps.replica ? await deps.replica.ledger.get(req.params.messageId, req.auth.accountId) : null;
      const source = seen && deps.replica ? deps.replica : { db: deps.db, ledger: deps.ledger };
      const rec = seen ?? (await deps.sms.find(req.params.messageId, req.auth.accountId));
      if (!rec) throw new ApiError('MESSAGE_NOT_FOUND', { message: `No message ${req.params.messageId}` });
      const [history, resends] = await Promise.all([
        source.ledger.history(rec.id),
        source.db.query<{ id: string }>(`SELECT id FROM messages WHERE resend_of = $1 AND account_id = $2 ORDER BY created_at, id`, [rec.id, rec.accountId]),
      ]);
      return ok(req, 'SMS_STATUS', statusData(rec, history, resends.rows.map((r) => r.id), deps.showUpstreams), `Message is ${rec.status}`);
    },
  );

  app.get<{ Params: { batchId: string } }>(
    '/v1/sms/batches/:batchId',
    {
      config: { scope: 'sms:read' },
      schema: {
        tags: ['sms'],
        summary: 'Summary of a bulk request',
        description:
          'The totals of the bulk request as its answer gave them (total items, accepted, rejected), and its accepted messages counted ' +
          'by status (items rejected at submission were never stored). A bulk request that accepted nothing (BULK_REJECTED) created ' +
          'no batch.',
        params: { type: 'object', required: ['batchId'], properties: { batchId: { type: 'string', minLength: 1, maxLength: 100 } } },
        response: withErrors({
          200: envelopeSchema({
            type: 'object',
            properties: {
              batchId: { type: 'string' },
              total: { type: 'integer', description: 'items in the bulk request' },
              accepted: { type: 'integer', description: 'items accepted (stored as messages; counts adds up to it)' },
              rejected: { type: ['integer', 'null'], description: 'items refused at submission; null when not recorded (batches of earlier versions)' },
              pending: { type: 'integer', description: 'accepted messages not yet in a final status' },
              counts: { type: 'object', properties: Object.fromEntries(ALL_STATUSES.map((s) => [s, { type: 'integer' }])) },
              segments: { type: 'integer' },
              cost: { type: 'number' },
              currency: { type: 'string' },
              createdAt: { type: 'string', format: 'date-time' },
            },
          }),
        }),
      },
    },
    async (req) => {
      const { batchId } = req.params;
      const summary = async (db: Db, store: BatchStore) => {
        const recorded = await store.get(batchId, req.auth.accountId);
        const { rows } = await db.query<{ status: MessageStatus; n: number; cost: number; segments: number; created_at: unknown; currency: string }>(
          `SELECT status, count(*)::int AS n, sum(cost_micros)::bigint AS cost, sum(segments)::bigint AS segments,
                  min(created_at) AS created_at, min(currency) AS currency
           FROM messages WHERE batch_id = $1 AND account_id = $2 GROUP BY status`,
          [batchId, req.auth.accountId],
        );
        return { recorded, rows };
      };
      // The replica's counts when it has the batch (they may lag); one accepted a moment ago is read on the primary.
      let read = deps.replica && replicaBatches ? await summary(deps.replica.db, replicaBatches) : null;
      if (!read || (!read.rows.length && !read.recorded)) read = await summary(deps.db, batches);
      const { recorded, rows } = read;
      if (!rows.length && !recorded) throw new ApiError('BATCH_NOT_FOUND', { message: `No batch ${batchId}` });
      const counts = Object.fromEntries(ALL_STATUSES.map((s) => [s, 0])) as Record<MessageStatus, number>;
      let stored = 0;
      let pending = 0;
      let costMicros = 0;
      let segments = 0;
      let createdAt = recorded?.createdAt ?? Infinity;
      for (const r of rows) {
        const n = Number(r.n);
        counts[r.status] = n;
        stored += n;
        if (!FINAL_STATUSES.includes(r.status)) pending += n;
        costMicros += Number(r.cost);
        segments += Number(r.segments);
        createdAt = Math.min(createdAt, toMs(r.created_at));
      }
      return ok(req, 'SMS_BATCH', {
        batchId,
        total: recorded?.total ?? stored,
        accepted: recorded?.accepted ?? stored,
        rejected: recorded?.rejected ?? null,
        pending,
        counts,
        segments,
        cost: fromMicros(costMicros),
        currency: rows[0]?.currency ?? req.auth.currency,
        createdAt: new Date(createdAt).toISOString(),
      });
    },
  );

  app.post<{ Body: { messageId: string; reference?: string } }>(
    '/v1/sms/resend',
    {
      config: { scope: 'sms:send' },
      schema: {
        tags: ['sms'],
        summary: 'Send a failed message again',
        description:
          'Creates a new message with the content, sender and recipient of a failed, undelivered, rejected or expired one (else ' +
          'NOT_RESENDABLE), linked to it by resendOf. Idempotency-Key works as on send.',
        headers: idemHeaders,
        body: {
          type: 'object',
          required: ['messageId'],
          additionalProperties: false,
          properties: {
            messageId: { type: 'string', minLength: 1, maxLength: 100 },
            reference: { type: 'string', maxLength: MAX_REFERENCE_CHARS, description: "the new message's reference (default: the original's)" },
          },
        },
        response: sendErrors({ 200: envelopeSchema(acceptedSchema, 'Accepted (code SMS_SENT)') }),
      },
    },
    async (req, reply) => {
      const { messageId, reference } = req.body;
      return idempotent(req, reply, deps.idempotency, async () => {
        const a = await viaSms(() =>
          deps.sms.resend(messageId, req.auth.accountId, { allowedRecipients: req.auth.allowedRecipients, ...(reference !== undefined ? { reference } : {}) }),
        );
        return ok(req, 'SMS_SENT', { ...acceptedData(a), resendOf: messageId }, 'Message accepted for delivery again');
      });
    },
  );

  app.get<{ Querystring: { limit?: string; after?: string } }>(
    '/v1/sms/inbound',
    {
      config: { scope: 'sms:read' },
      schema: {
        tags: ['sms'],
        summary: 'Inbound (MO) messages to the account\'s numbers, newest first',
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            // Query values arrive as strings (the API does not coerce types).
            limit: { type: 'string', pattern: '^(?:[1-9][0-9]?|[1-4][0-9]{2}|500)$', description: 'page size, 1–500 (default 50)' },
            after: { type: 'string', minLength: 1, maxLength: 300, description: 'nextCursor of the previous page' },
          },
        },
        response: withErrors({
          200: envelopeSchema({
            type: 'object',
            properties: {
              messages: {
                type: 'array',
                items: {
                  type: 'object',
                  properties: {
                    id: { type: 'string', description: 'prefix mo_' },
                    from: { type: 'string' },
                    to: { type: 'string', description: 'the account number it was sent to' },
                    message: nullableString,
                    dataCoding: { type: ['integer', 'null'] },
                    receivedAt: { type: 'string', format: 'date-time' },
                    upstream: { ...nullableString, description: 'present only where the deployment shows upstreams' },
                  },
                },
              },
              nextCursor: { ...nullableString, description: 'pass as `after` for the next page; null on the last page' },
            },
          }),
        }),
      },
    },
    async (req) => {
      const limit = req.query.limit ? Number(req.query.limit) : 50;
      const params: unknown[] = [req.auth.accountId, limit + 1];
      let where = 'account_id = $1';
      if (req.query.after) {
        const c = decodeCursor(req.query.after);
        params.push(c.us, c.id);
        where += ` AND (received_at, id) < ('epoch'::timestamptz + $3::double precision * interval '1 microsecond', $4)`;
      }
      const { rows } = await (deps.replica?.db ?? deps.db).query<{
        id: string;
        source: string;
        destination: string;
        body: string | null;
        data_coding: number | null;
        upstream_id: string | null;
        received_at: unknown;
        us: string | number;
      }>(
        `SELECT id, source, destination, body, data_coding, upstream_id, received_at,
                (extract(epoch FROM received_at) * 1000000)::bigint AS us
         FROM inbound_messages WHERE ${where} ORDER BY received_at DESC, id DESC LIMIT $2`,
        params,
      );
      const page = rows.slice(0, limit);
      const last = page[page.length - 1];
      return ok(req, 'SMS_INBOUND', {
        messages: page.map((r) => ({
          id: r.id,
          from: r.source,
          to: r.destination,
          message: r.body,
          dataCoding: r.data_coding,
          receivedAt: new Date(toMs(r.received_at)).toISOString(),
          ...(deps.showUpstreams ? { upstream: r.upstream_id } : {}),
        })),
        nextCursor: rows.length > limit && last ? encodeCursor(last.us, last.id) : null,
      });
    },
  );
}

function statusData(rec: MessageRecord, history: MessageEvent[], resends: string[], showUpstreams: boolean): Record<string, unknown> {
  const submitted = history.find((e) => e.status === 'submitted');
  return {
    messageId: rec.id,
    channel: rec.channel,
    status: rec.status,
    to: rec.destination,
    from: rec.source,
    reference: rec.reference,
    segments: rec.segments,
    encoding: rec.encoding,
    cost: fromMicros(rec.costMicros),
    currency: rec.currency,
    createdAt: new Date(rec.createdAt).toISOString(),
    scheduledAt: iso(rec.scheduledAt),
    submittedAt: submitted ? new Date(submitted.at).toISOString() : null,
    finalAt: iso(rec.finalAt),
    error: rec.errorCode,
    route: rec.routeRule,
    ...(showUpstreams ? { upstream: rec.upstreamId } : {}),
    attempts: rec.attempts,
    resendOf: rec.resendOf,
    resends,
    batchId: rec.batchId,
    history: history.map((e) => ({ status: e.status, at: new Date(e.at).toISOString(), detail: publicDetail(e.detail, showUpstreams) })),
  };
}
