import type { SecretCipher } from '../../security/cipher.js';
import type { Db, Queryable } from '../../store/types.js';
import { newId } from '../../util/ids.js';
import { newSigningSecret } from '../../security/standard-webhooks-signature.js';
import { FRESH_TICK_SQL, TICK_LOCK_SQL } from '../../events/event-log-ticker.js';

export interface WebhookEndpoint {
  id: string;
  accountId: string;
  url: string;
  events: string[];
  description: string | null;
  enabled: boolean;
  failingSince: number | null;
  disabledReason: string | null;
  previousSecretValidUntil: number | null;
  /** Batched delivery: arrays of up to maxEvents events, sent once that many wait or the oldest has waited maxWaitMs. */
  batch: EndpointBatch | null;
  createdAt: number;
  updatedAt: number;
}

export interface EndpointBatch {
  maxEvents: number;
  maxWaitMs: number;
}

export interface DeliveryRecord {
  id: string;
  endpointId: string;
  eventId: string;
  eventType: string;
  status: 'pending' | 'failed' | 'delivered' | 'dead';
  attempts: number;
  nextAttemptAt: number | null;
  lastStatusCode: number | null;
  lastError: string | null;
  lastLatencyMs: number | null;
  createdAt: number;
  deliveredAt: number | null;
}

export interface EndpointPatch {
  url?: string;
  events?: string[];
  description?: string | null;
  enabled?: boolean;
  /** null: back to one event per POST. */
  batch?: EndpointBatch | null;
}

function ms(v: unknown): number {
  return v instanceof Date ? v.getTime() : new Date(v as string).getTime();
}

function msOrNull(v: unknown): number | null {
  return v === null || v === undefined ? null : ms(v);
}

function toEndpoint(r: Record<string, unknown>): WebhookEndpoint {
  return {
    id: r.id as string,
    accountId: r.account_id as string,
    url: r.url as string,
    events: r.events as string[],
    description: (r.description as string | null) ?? null,
    enabled: r.enabled as boolean,
    failingSince: msOrNull(r.failing_since),
    disabledReason: (r.disabled_reason as string | null) ?? null,
    previousSecretValidUntil: r.previous_secret_cipher ? msOrNull(r.previous_valid_until) : null,
    batch: r.batch_max_events ? { maxEvents: r.batch_max_events as number, maxWaitMs: r.batch_max_wait_ms as number } : null,
    createdAt: ms(r.created_at),
    updatedAt: ms(r.updated_at),
  };
}

function toDelivery(r: Record<string, unknown>): DeliveryRecord {
  return {
    id: r.id as string,
    endpointId: r.endpoint_id as string,
    eventId: r.event_id as string,
    eventType: r.type as string,
    status: r.status as DeliveryRecord['status'],
    attempts: r.attempts as number,
    nextAttemptAt: r.status === 'pending' || r.status === 'failed' ? msOrNull(r.next_attempt_at) : null,
    lastStatusCode: (r.last_status_code as number | null) ?? null,
    lastError: (r.last_error as string | null) ?? null,
    lastLatencyMs: (r.last_latency_ms as number | null) ?? null,
    createdAt: ms(r.created_at),
    deliveredAt: msOrNull(r.delivered_at),
  };
}

/** Decrypted signing secrets kept; past this the cache starts over (endpoints are few in practice). */
const MAX_DECRYPTED = 10_000;

const NEW_DELIVERY_ID_SQL = `'whd_' || replace(gen_random_uuid()::text, '-', '')`;


const RECOVERED_SQL = `UPDATE webhook_endpoints SET failing_since = NULL WHERE id = ANY($1::text[]) AND failing_since IS NOT NULL`;

// Failing continuously since failing_since (any success resets it); past disableAfter the endpoint is disabled.
const FAILING_SQL = `UPDATE webhook_endpoints SET failing_since = COALESCE(failing_since, now()),
    enabled = CASE WHEN failing_since < now() - make_interval(secs => $2::float8 / 1000.0) THEN false ELSE enabled END,
    disabled_reason = CASE WHEN failing_since < now() - make_interval(secs => $2::float8 / 1000.0)
      THEN 'every delivery failed since ' || to_char(failing_since AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') || '; last error: ' || $3
      ELSE disabled_reason END,
    updated_at = CASE WHEN failing_since < now() - make_interval(secs => $2::float8 / 1000.0) THEN now() ELSE updated_at END
  WHERE id = $1 AND enabled RETURNING enabled`;

/** A row of the delivery log written by the event stream: a failed first attempt, one parked behind it, or a sample. */
export interface StreamRow {
  endpointId: string;
  eventId: string;
  eventSeq: number;
  messageKey: string | null;
  status: 'pending' | 'failed' | 'delivered' | 'dead';
  attempts: number;
  /** Due (pending/failed), from now. */
  dueInMs: number;
  statusCode: number | null;
  error: string | null;
  latencyMs: number | null;
}

/**
 * Stream rows in one statement. A delivery's id is derived from its event and endpoint, so a row written twice (a
 * batch sent again after a crash) is the same row; an open one is left as it is.
 */
const STREAM_ROWS_SQL = `INSERT INTO webhook_deliveries (id, endpoint_id, event_id, event_seq, message_key, status, attempts, next_attempt_at,
    last_status_code, last_error, last_latency_ms, delivered_at)
  SELECT 'whd_' || substr(u.event_id, 5) || '_' || substr(u.endpoint_id, 4), u.endpoint_id, u.event_id, u.event_seq, u.message_key, u.status, u.attempts,
    CASE WHEN u.status IN ('pending', 'failed') THEN now() + make_interval(secs => u.due_ms / 1000.0) END,
    u.code, u.error, u.latency, CASE WHEN u.status = 'delivered' THEN now() END
  FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::int[], $7::float8[], $8::int[], $9::text[], $10::int[])
    AS u(endpoint_id, event_id, event_seq, message_key, status, attempts, due_ms, code, error, latency)
  ON CONFLICT (endpoint_id, event_id) DO NOTHING`;

/**
 * Webhook endpoints and their delivery log in SQL. Every read and write is scoped by account: another account's
 * id is simply not found. Signing secrets are stored encrypted and returned in plain text only by create and rotate.
 */
export class WebhookStore {
  private readonly decrypted = new Map<string, string>();

  constructor(
    private readonly db: Db,
    private readonly cipher: SecretCipher,
  ) {}

  async create(
    accountId: string,
    e: { url: string; events: string[]; description: string | null; enabled: boolean; batch?: EndpointBatch | null },
  ): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
    const secret = newSigningSecret();
    return this.db.tx(async (q) => {
      const { rows } = await q.query(
        `INSERT INTO webhook_endpoints (id, account_id, url, events, description, enabled, secret_cipher, batch_max_events, batch_max_wait_ms)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING *`,
        [newId('wh_'), accountId, e.url, e.events, e.description, e.enabled, this.cipher.encrypt(secret), e.batch?.maxEvents ?? null, e.batch?.maxWaitMs ?? null],
      );
      // Its events start with those committed after now.
      await q.query(TICK_LOCK_SQL);
      await q.query(`WITH t AS (${FRESH_TICK_SQL}) INSERT INTO webhook_cursors (endpoint_id, tick_id) SELECT $1, id FROM t`, [rows[0].id]);
      return { endpoint: toEndpoint(rows[0]), secret };
    });
  }

  async list(accountId: string): Promise<WebhookEndpoint[]> {
    const { rows } = await this.db.query(`SELECT * FROM webhook_endpoints WHERE account_id = $1 ORDER BY created_at, id`, [accountId]);
    return rows.map(toEndpoint);
  }

  async get(accountId: string, id: string): Promise<WebhookEndpoint | null> {
    const { rows } = await this.db.query(`SELECT * FROM webhook_endpoints WHERE id = $1 AND account_id = $2`, [id, accountId]);
    return rows.length ? toEndpoint(rows[0]) : null;
  }

  /**
   * Enabling clears the failure state (the owner says the receiver is fixed); a disabled endpoint enabled again takes
   * the events committed from then on (none were kept for it while it was disabled).
   */
  async update(accountId: string, id: string, p: EndpointPatch): Promise<WebhookEndpoint | null> {
    return this.db.tx(async (q) => {
      const before = await q.query<{ enabled: boolean }>(`SELECT enabled FROM webhook_endpoints WHERE id = $1 AND account_id = $2 FOR UPDATE`, [id, accountId]);
      if (!before.rows.length) return null;
      const e = await this.updateRow(q, accountId, id, p);
      if (e && e.enabled && !before.rows[0].enabled) {
        await q.query(TICK_LOCK_SQL);
        await q.query(`WITH t AS (${FRESH_TICK_SQL}) UPDATE webhook_cursors SET tick_id = t.id FROM t WHERE endpoint_id = $1`, [id]);
      }
      return e;
    });
  }

  private async updateRow(q: Queryable, accountId: string, id: string, p: EndpointPatch): Promise<WebhookEndpoint | null> {
    const { rows } = await q.query(
      `UPDATE webhook_endpoints SET url = COALESCE($3, url), events = COALESCE($4::text[], events),
         description = CASE WHEN $5::bool THEN $6 ELSE description END, enabled = COALESCE($7, enabled),
         failing_since = CASE WHEN $7 THEN NULL ELSE failing_since END,
         disabled_reason = CASE WHEN $7 THEN NULL ELSE disabled_reason END,
         batch_max_events = CASE WHEN $8::bool THEN $9::int ELSE batch_max_events END,
         batch_max_wait_ms = CASE WHEN $8::bool THEN $10::int ELSE batch_max_wait_ms END, updated_at = now()
       WHERE id = $1 AND account_id = $2 RETURNING *`,
      [
        id,
        accountId,
        p.url ?? null,
        p.events ?? null,
        p.description !== undefined,
        p.description ?? null,
        p.enabled ?? null,
        p.batch !== undefined,
        p.batch?.maxEvents ?? null,
        p.batch?.maxWaitMs ?? null,
      ],
    );
    return rows.length ? toEndpoint(rows[0]) : null;
  }

  async remove(accountId: string, id: string): Promise<boolean> {
    const { rowCount } = await this.db.query(`DELETE FROM webhook_endpoints WHERE id = $1 AND account_id = $2`, [id, accountId]);
    return rowCount > 0;
  }

  /** A new secret; the old one keeps signing (alongside) for overlapMs so receivers can switch without a gap. */
  async rotate(accountId: string, id: string, overlapMs: number): Promise<{ endpoint: WebhookEndpoint; secret: string } | null> {
    const secret = newSigningSecret();
    const { rows } = await this.db.query(
      `UPDATE webhook_endpoints SET
         previous_secret_cipher = CASE WHEN $4::float8 > 0 THEN secret_cipher ELSE NULL END,
         previous_valid_until = CASE WHEN $4::float8 > 0 THEN now() + make_interval(secs => $4::float8 / 1000.0) ELSE NULL END,
         secret_cipher = $3, updated_at = now()
       WHERE id = $1 AND account_id = $2 RETURNING *`,
      [id, accountId, this.cipher.encrypt(secret), overlapMs],
    );
    return rows.length ? { endpoint: toEndpoint(rows[0]), secret } : null;
  }

  /** The secrets a delivery is signed with now: the current one, plus the previous one during a rotation overlap. */
  signingSecrets(row: { secret_cipher: string; previous_secret_cipher: string | null; previous_valid_until: unknown }, now = Date.now()): string[] {
    const out = [this.plain(row.secret_cipher)];
    if (row.previous_secret_cipher && row.previous_valid_until && ms(row.previous_valid_until) > now) out.push(this.plain(row.previous_secret_cipher));
    return out;
  }

  /** A secret decrypted once per ciphertext (every delivery is signed; a rotation makes a new ciphertext). */
  private plain(cipherText: string): string {
    let secret = this.decrypted.get(cipherText);
    if (secret === undefined) {
      secret = this.cipher.decrypt(cipherText);
      if (this.decrypted.size >= MAX_DECRYPTED) this.decrypted.clear();
      this.decrypted.set(cipherText, secret);
    }
    return secret;
  }

  /** The delivery log of an endpoint, newest first. */
  async deliveries(endpointId: string, opts: { limit: number; status?: string }): Promise<DeliveryRecord[]> {
    const { rows } = await this.db.query(
      `SELECT d.*, ev.type FROM webhook_deliveries d JOIN webhook_events ev ON ev.seq = d.event_seq AND ev.id = d.event_id
       WHERE d.endpoint_id = $1 AND ($2::text IS NULL OR d.status = $2) ORDER BY d.created_at DESC, d.id DESC LIMIT $3`,
      [endpointId, opts.status ?? null, opts.limit],
    );
    return rows.map(toDelivery);
  }

  async delivery(endpointId: string, deliveryId: string): Promise<DeliveryRecord | null> {
    const { rows } = await this.db.query(
      `SELECT d.*, ev.type FROM webhook_deliveries d JOIN webhook_events ev ON ev.seq = d.event_seq AND ev.id = d.event_id WHERE d.id = $1 AND d.endpoint_id = $2`,
      [deliveryId, endpointId],
    );
    return rows.length ? toDelivery(rows[0]) : null;
  }

  /** Sends a delivery again from the start (same event id, so receivers can deduplicate); attempts count anew. */
  async resetForReplay(endpointId: string, deliveryId: string): Promise<boolean> {
    const { rowCount } = await this.db.query(
      `UPDATE webhook_deliveries SET status = 'pending', attempts = 0, next_attempt_at = now(), delivered_at = NULL WHERE id = $1 AND endpoint_id = $2`,
      [deliveryId, endpointId],
    );
    return rowCount > 0;
  }

  /** A webhook.test event delivered to this endpoint only: a row of the retry set, due now (streams skip the type). */
  async createTest(accountId: string, endpointId: string, data: Record<string, unknown>): Promise<{ eventId: string; deliveryId: string }> {
    return this.db.tx(async (q: Queryable) => {
      const ev = await q.query<{ id: string; seq: string }>(
        `INSERT INTO webhook_events (id, account_id, type, message_key, payload)
         VALUES ('evt_' || replace(gen_random_uuid()::text, '-', ''), $1, 'webhook.test', NULL, $2::jsonb) RETURNING id, seq`,
        [accountId, JSON.stringify(data)],
      );
      const d = await q.query<{ id: string }>(
        `INSERT INTO webhook_deliveries (id, endpoint_id, event_id, event_seq, message_key) VALUES (${NEW_DELIVERY_ID_SQL}, $1, $2, $3, NULL) RETURNING id`,
        [endpointId, ev.rows[0].id, ev.rows[0].seq],
      );
      return { eventId: ev.rows[0].id, deliveryId: d.rows[0].id };
    });
  }

  /** Rows the event stream writes for a batch (failed attempts, events parked behind them, samples), in one statement. */
  async streamRows(q: Queryable, rows: readonly StreamRow[]): Promise<void> {
    if (!rows.length) return;
    await q.query(STREAM_ROWS_SQL, [
      rows.map((r) => r.endpointId),
      rows.map((r) => r.eventId),
      rows.map((r) => r.eventSeq),
      rows.map((r) => r.messageKey),
      rows.map((r) => r.status),
      rows.map((r) => r.attempts),
      rows.map((r) => r.dueInMs),
      rows.map((r) => r.statusCode),
      rows.map((r) => r.error),
      rows.map((r) => r.latencyMs),
    ]);
  }

  /** Endpoints that had been failing answered: no longer failing. */
  async recovered(endpointIds: readonly string[]): Promise<void> {
    if (endpointIds.length) await this.db.query(RECOVERED_SQL, [endpointIds]);
  }

  /** An attempt failed: the endpoint is failing since its first such; true when this disabled it. */
  async recordFailure(endpointId: string, disableAfterMs: number, error: string): Promise<boolean> {
    const { rows } = await this.db.query<{ enabled: boolean }>(FAILING_SQL, [endpointId, disableAfterMs, error]);
    return rows.length > 0 && !rows[0].enabled;
  }

  /** An endpoint's stream, for operators: events delivered from it, when last, which instance holds it, how far behind. */
  async stream(endpointId: string): Promise<{ delivered: number; lastDeliveredAt: number | null; holder: string | null; behindEvents: number } | null> {
    const { rows } = await this.db.query<{ delivered: string; last_delivered_at: unknown; owner: string | null; lease_until: unknown; behind: string | null }>(
      `SELECT c.delivered, c.last_delivered_at, c.owner, c.lease_until, (SELECT max(last_seq) FROM webhook_ticks) - k.last_seq AS behind
       FROM webhook_cursors c LEFT JOIN webhook_ticks k ON k.id = c.tick_id WHERE c.endpoint_id = $1`,
      [endpointId],
    );
    const r = rows[0];
    if (!r) return null;
    const held = r.owner && r.lease_until && ms(r.lease_until) > Date.now();
    return { delivered: Number(r.delivered), lastDeliveredAt: msOrNull(r.last_delivered_at), holder: held ? r.owner : null, behindEvents: Math.max(0, Number(r.behind ?? 0)) };
  }

  /** Events written since the cursor of the enabled endpoint furthest behind (the stream lag gauge). */
  async streamLag(): Promise<number> {
    const { rows } = await this.db.query<{ lag: string | null }>(
      `SELECT (SELECT max(last_seq) FROM webhook_ticks) - min(k.last_seq) AS lag
       FROM webhook_cursors c JOIN webhook_endpoints e ON e.id = c.endpoint_id AND e.enabled JOIN webhook_ticks k ON k.id = c.tick_id`,
    );
    return Math.max(0, Number(rows[0]?.lag ?? 0));
  }

  /** Open deliveries by status (the backlog gauge). */
  async backlog(): Promise<{ pending: number; failed: number }> {
    const { rows } = await this.db.query<{ status: 'pending' | 'failed'; n: number }>(
      `SELECT status, count(*)::int AS n FROM webhook_deliveries WHERE status IN ('pending', 'failed') GROUP BY status`,
    );
    const out = { pending: 0, failed: 0 };
    for (const r of rows) out[r.status] = r.n;
    return out;
  }
}
