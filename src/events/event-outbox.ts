import type { AppliedChange, EffectStatement } from '../ledger/ledger.js';
import { plannedPerBatch, prepared } from '../store/sql/prepared.js';
import type { Queryable } from '../store/types.js';
import { smsEventOf, type EventType } from './catalogue.js';

/** SQL for a new event id: random (order comes from webhook_events.seq), prefix evt_. */
export const EVENT_ID_SQL = `'evt_' || replace(gen_random_uuid()::text, '-', '')`;

/**
 * True when some enabled endpoint of the account takes this type: events nobody receives are not stored. The first,
 * uncorrelated EXISTS is planned as a one-time filter: with no enabled endpoint at all (an SMPP-only deployment) the
 * statement stops there instead of reading every row of its batch.
 */
export const SUBSCRIBED_SQL = (account: string, type: string) =>
  `(EXISTS (SELECT 1 FROM webhook_endpoints e0 WHERE e0.enabled) AND ` +
  `EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.account_id = ${account} AND e.enabled AND e.events && ARRAY['*', ${type}]::text[]))`;

const INSERT_SMS_SQL = plannedPerBatch(`INSERT INTO webhook_events (id, account_id, type, message_key, payload)
  SELECT ${EVENT_ID_SQL}, m.account_id, u.type, m.id,
    jsonb_build_object('messageId', m.id, 'reference', m.reference, 'status', u.status, 'to', m.destination, 'from', m.source, 'error', u.error_code)
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS u(id, type, status, error_code, n)
  JOIN messages m ON m.id = u.id AND m.id = ANY($1::text[])
  WHERE ${SUBSCRIBED_SQL('m.account_id', 'u.type')}
  ORDER BY u.n`);

const INSERT_ONE_SQL = `INSERT INTO webhook_events (id, account_id, type, message_key, payload)
  SELECT ${EVENT_ID_SQL}, $1, $2, $3, $4::jsonb WHERE $5::bool OR ${SUBSCRIBED_SQL('$1', '$2')}
  RETURNING id`;

// Many events in one statement, each kept only when an enabled endpoint of its account subscribes; in input order.
const INSERT_MANY_SQL = prepared(`INSERT INTO webhook_events (id, account_id, type, message_key, payload)
  SELECT ${EVENT_ID_SQL}, u.account_id, u.type, u.message_key, u.payload::jsonb
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS u(account_id, type, message_key, payload, n)
  WHERE ${SUBSCRIBED_SQL('u.account_id', 'u.type')}
  ORDER BY u.n`);

export interface NewEvent {
  accountId: string;
  type: EventType;
  /** Events with the same key reach an endpoint in order (the message or OTP id). */
  messageKey: string | null;
  data: Record<string, unknown>;
}

/**
 * Writes webhook events into the outbox table, always through the caller's Queryable so that an event commits with
 * the state change that caused it (ledger effect, MO transaction). sms.queued is written by the ledger writer's own
 * statement. The table is an append-only log: each endpoint reads it through its cursor (src/channels/webhooks/event-stream.ts).
 */
export class EventOutbox {
  /** The ledger effect: sms.sent / delivered / undelivered / failed for the batch's changes, in its transaction. */
  readonly effect = (changes: readonly AppliedChange[]): EffectStatement | null => {
    const ids: string[] = [];
    const types: string[] = [];
    const statuses: string[] = [];
    const errors: (string | null)[] = [];
    for (const c of changes) {
      const type = smsEventOf(c.to);
      // queued/scheduled come from acceptance (the writer); a scheduled message falling due is not news.
      if (!type || type === 'sms.queued') continue;
      ids.push(c.id);
      types.push(type);
      statuses.push(c.to);
      errors.push(c.errorCode);
    }
    return ids.length ? { text: INSERT_SMS_SQL, params: [ids, types, statuses, errors] } : null;
  };

  /** Several events (those no endpoint subscribes to are dropped); returns how many were stored. */
  async insertMany(q: Queryable, events: readonly NewEvent[]): Promise<number> {
    if (!events.length) return 0;
    const r = await q.query(INSERT_MANY_SQL, [
      events.map((e) => e.accountId),
      events.map((e) => e.type),
      events.map((e) => e.messageKey),
      events.map((e) => JSON.stringify(e.data)),
    ]);
    return r.rowCount;
  }

  /** One event; unless `always`, only when an enabled endpoint of the account subscribes. Returns its id, or null. */
  async insert(q: Queryable, e: NewEvent, always = false): Promise<string | null> {
    const { rows } = await q.query<{ id: string }>(INSERT_ONE_SQL, [e.accountId, e.type, e.messageKey, JSON.stringify(e.data), always]);
    return rows[0]?.id ?? null;
  }
}
