import type { Queryable } from '../../store/types.js';
import type { AppServices, DeviceRow, SendMessage } from './batch-job.js';

/** The apps of an account by id, with what grouping needs: whether iOS tokens go to APNs, and its environment. */
export async function appServicesOf(q: Queryable, accountId: string, appIds: readonly string[], simulatedApns: boolean): Promise<Map<string, AppServices>> {
  const apps = new Map<string, AppServices>();
  if (!appIds.length) return apps;
  const { rows } = await q.query<{ id: string; apns_bundle_id: string | null; apns_environment: string | null }>(
    `SELECT id, apns_bundle_id, apns_environment FROM push_apps WHERE account_id = $1 AND id = ANY($2::text[])`,
    [accountId, appIds],
  );
  for (const r of rows) apps.set(r.id, { apns: simulatedApns || r.apns_bundle_id !== null, apnsEnvironment: r.apns_environment === 'sandbox' ? 'sandbox' : 'production' });
  return apps;
}

export interface SendRow {
  id: string;
  account_id: string;
  target_kind: 'device' | 'user' | 'topic';
  target: string;
  message: SendMessage | string;
  status: 'expanding' | 'sending' | 'completed';
  targeted: number;
  sent: number;
  failed: number;
  invalidated: number;
  pending: number;
  created_at: Date | string;
  completed_at: Date | string | null;
}

export interface OutcomeRow {
  device_id: string;
  status: 'sent' | 'failed' | 'invalidated';
  provider_id: string | null;
  error: string | null;
  provider_error: string | null;
  message: string | null;
  at: Date | string;
}

export async function insertSend(
  q: Queryable,
  s: { id: string; accountId: string; targetKind: 'device' | 'user' | 'topic'; target: string; message: SendMessage; status: 'expanding' | 'sending'; targeted: number; now: number },
): Promise<void> {
  await q.query(
    `INSERT INTO push_sends (id, account_id, target_kind, target, message, status, targeted, pending, next_expand_at, created_at)
     VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7, $7, CASE WHEN $6 = 'expanding' THEN to_timestamp($8::float8 / 1000.0) END, to_timestamp($8::float8 / 1000.0))`,
    [s.id, s.accountId, s.targetKind, s.target, JSON.stringify(s.message), s.status, s.targeted, s.now],
  );
}

export async function sendOf(q: Queryable, accountId: string, pushId: string): Promise<SendRow | null> {
  const { rows } = await q.query<SendRow>(`SELECT * FROM push_sends WHERE id = $1 AND account_id = $2`, [pushId, accountId]);
  return rows[0] ?? null;
}

/** A page of a send's per-device outcomes, by device id after `after`. */
export async function outcomesOf(q: Queryable, pushId: string, o: { after: string | null; limit: number; status?: string }): Promise<OutcomeRow[]> {
  const { rows } = await q.query<OutcomeRow>(
    `SELECT device_id, status, provider_id, error, provider_error, message, at FROM push_send_outcomes
     WHERE send_id = $1 AND device_id > $2 AND ($3::text IS NULL OR status = $3) ORDER BY device_id LIMIT $4`,
    [pushId, o.after ?? '', o.status ?? null, o.limit],
  );
  return rows;
}

/** A page of an account's sends, newest first (ids sort by time). */
export async function sendsOf(q: Queryable, accountId: string, o: { before: string | null; limit: number }): Promise<SendRow[]> {
  const { rows } = await q.query<SendRow>(
    `SELECT * FROM push_sends WHERE account_id = $1 AND ($2::text IS NULL OR id < $2) ORDER BY id DESC LIMIT $3`,
    [accountId, o.before, o.limit],
  );
  return rows;
}

/** The active devices of a user (every app of the account). */
export async function userDevices(q: Queryable, accountId: string, userId: string, limit: number): Promise<DeviceRow[]> {
  const { rows } = await q.query<DeviceRow>(
    `SELECT id, app_id, token, platform, environment FROM push_devices WHERE account_id = $1 AND user_id = $2 AND status = 'active' ORDER BY created_at DESC LIMIT $3`,
    [accountId, userId, limit],
  );
  return rows;
}

/** One device of the account, with its status. */
export async function deviceOf(q: Queryable, accountId: string, deviceId: string): Promise<(DeviceRow & { status: string }) | null> {
  const { rows } = await q.query<DeviceRow & { status: string }>(
    `SELECT id, app_id, token, platform, environment, status FROM push_devices WHERE id = $1 AND account_id = $2`,
    [deviceId, accountId],
  );
  return rows[0] ?? null;
}

export async function topicSize(q: Queryable, accountId: string, topic: string): Promise<number | null> {
  const { rows } = await q.query<{ size: number }>(`SELECT size FROM push_topics WHERE account_id = $1 AND name = $2`, [accountId, topic]);
  return rows[0] ? Number(rows[0].size) : null;
}
