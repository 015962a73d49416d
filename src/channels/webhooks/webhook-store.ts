import type { SecretCipher } from '../../security/cipher.js';
import type { Db, Queryable } from '../../store/types.js';
import { newId } from '../../util/ids.js';
import { newSigningSecret } from '../../security/standard-webhooks-signature.js';

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
  createdAt: number;
  updatedAt: number;
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

  async create(accountId: string, e: { url: string; events: string[]; description: string | null; enabled: boolean }): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
    const secret = newSigningSecret();
    const { rows } = await this.db.query(
      `INSERT INTO webhook_endpoints (id, account_id, url, events, description, enabled, secret_cipher) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *`,
      [newId('wh_'), accountId, e.url, e.events, e.description, e.enabled, this.cipher.encrypt(secret)],
    );
    return { endpoint: toEndpoint(rows[0]), secret };
  }

  async list(accountId: string): Promise<WebhookEndpoint[]> {
    const { rows } = await this.db.query(`SELECT * FROM webhook_endpoints WHERE account_id = $1 ORDER BY created_at, id`, [accountId]);
    return rows.map(toEndpoint);
  }

  async get(accountId: string, id: string): Promise<WebhookEndpoint | null> {
    const { rows } = await this.db.query(`SELECT * FROM webhook_endpoints WHERE id = $1 AND account_id = $2`, [id, accountId]);
    return rows.length ? toEndpoint(rows[0]) : null;
  }

  /** Enabling clears the failure state (the owner says the receiver is fixed). */
  async update(accountId: string, id: string, p: EndpointPatch): Promise<WebhookEndpoint | null> {
    const { rows } = await this.db.query(
      `UPDATE webhook_endpoints SET url = COALESCE($3, url), events = COALESCE($4::text[], events),
         description = CASE WHEN $5::bool THEN $6 ELSE description END, enabled = COALESCE($7, enabled),
         failing_since = CASE WHEN $7 THEN NULL ELSE failing_since END,
         disabled_reason = CASE WHEN $7 THEN NULL ELSE disabled_reason END, updated_at = now()
       WHERE id = $1 AND account_id = $2 RETURNING *`,
      [id, accountId, p.url ?? null, p.events ?? null, p.description !== undefined, p.description ?? null, p.enabled ?? null],
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
      `SELECT d.*, ev.type FROM webhook_deliveries d JOIN webhook_events ev ON ev.id = d.event_id
       WHERE d.endpoint_id = $1 AND ($2::text IS NULL OR d.status = $2) ORDER BY d.created_at DESC, d.id DESC LIMIT $3`,
      [endpointId, opts.status ?? null, opts.limit],
    );
    return rows.map(toDelivery);
  }

  async delivery(endpointId: string, deliveryId: string): Promise<DeliveryRecord | null> {
    const { rows } = await this.db.query(
      `SELECT d.*, ev.type FROM webhook_deliveries d JOIN webhook_events ev ON ev.id = d.event_id WHERE d.id = $1 AND d.endpoint_id = $2`,
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

  /** A webhook.test event delivered to this endpoint only (it skips the fan-out). */
  async createTest(accountId: string, endpointId: string, data: Record<string, unknown>): Promise<{ eventId: string; deliveryId: string }> {
    return this.db.tx(async (q: Queryable) => {
      const ev = await q.query<{ id: string; seq: string }>(
        `INSERT INTO webhook_events (id, account_id, type, message_key, payload, fanned_out)
         VALUES ('evt_' || replace(gen_random_uuid()::text, '-', ''), $1, 'webhook.test', NULL, $2::jsonb, true) RETURNING id, seq`,
        [accountId, JSON.stringify(data)],
      );
      const d = await q.query<{ id: string }>(
        `INSERT INTO webhook_deliveries (id, endpoint_id, event_id, event_seq, message_key) VALUES (${NEW_DELIVERY_ID_SQL}, $1, $2, $3, NULL) RETURNING id`,
        [endpointId, ev.rows[0].id, ev.rows[0].seq],
      );
      return { eventId: ev.rows[0].id, deliveryId: d.rows[0].id };
    });
  }

  /**
   * Fan-out of up to `limit` events not yet fanned out, in one statement (atomic): a delivery per enabled endpoint
   * of the account that subscribes to the type, and the events marked. Concurrent instances skip each other's rows.
   * Returns the new deliveries' ids in event order.
   */
  async fanOut(limit: number): Promise<string[]> {
    const { rows } = await this.db.query<{ id: string }>(
      `WITH ev AS (
         SELECT id, seq, account_id, type, message_key FROM webhook_events WHERE NOT fanned_out ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED
       ), mark AS (
         UPDATE webhook_events w SET fanned_out = true FROM ev WHERE w.id = ev.id
       )
       INSERT INTO webhook_deliveries (id, endpoint_id, event_id, event_seq, message_key)
       SELECT ${NEW_DELIVERY_ID_SQL}, e.id, ev.id, ev.seq, ev.message_key
       FROM ev JOIN webhook_endpoints e ON e.account_id = ev.account_id AND e.enabled AND e.events && ARRAY['*', ev.type]::text[]
       ORDER BY ev.seq
       ON CONFLICT (endpoint_id, event_id) DO NOTHING
       RETURNING id`,
      [limit],
    );
    return rows.map((r) => r.id);
  }

  /** Open deliveries overdue by more than graceMs (their queue item was lost: a crash between fan-out and push). */
  async overdue(graceMs: number, limit: number): Promise<{ id: string; nextAttemptAt: number }[]> {
    const { rows } = await this.db.query<{ id: string; next_attempt_at: unknown }>(
      `SELECT id, next_attempt_at FROM webhook_deliveries WHERE status IN ('pending', 'failed')
         AND next_attempt_at < now() - make_interval(secs => $1::float8 / 1000.0) ORDER BY next_attempt_at LIMIT $2`,
      [graceMs, limit],
    );
    return rows.map((r) => ({ id: r.id, nextAttemptAt: ms(r.next_attempt_at) }));
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
