import type { Queryable } from '../../store/types.js';
import type { DeviceFields, DeviceStatus, PushDevice } from './device.js';
import type { PushPlatform } from './providers/types.js';

interface DeviceRow {
  id: string;
  account_id: string;
  app_id: string;
  token: string;
  platform: PushPlatform;
  environment: PushDevice['environment'];
  user_id: string | null;
  locale: string | null;
  timezone: string | null;
  tags: string[] | null;
  status: DeviceStatus;
  invalid_reason: string | null;
  invalidated_at: Date | string | null;
  created_at: Date | string;
  updated_at: Date | string;
}

const COLUMNS = `id, account_id, app_id, token, platform, environment, user_id, locale, timezone, tags, status, invalid_reason, invalidated_at, created_at, updated_at`;

function toDevice(r: DeviceRow): PushDevice {
  return {
    id: r.id,
    accountId: r.account_id,
    appId: r.app_id,
    token: r.token,
    platform: r.platform,
    environment: r.environment,
    userId: r.user_id,
    locale: r.locale,
    timezone: r.timezone,
    tags: r.tags ?? [],
    status: r.status,
    invalidReason: r.invalid_reason,
    invalidatedAt: r.invalidated_at === null ? null : new Date(r.invalidated_at),
    createdAt: new Date(r.created_at),
    updatedAt: new Date(r.updated_at),
  };
}

export interface DeviceFilter {
  appId?: string;
  userId?: string;
  platform?: PushPlatform;
  status?: DeviceStatus;
  tag?: string;
  /** Devices with an id below this (newest first). */
  before?: string;
  limit: number;
}

/** The optional fields as statement parameters: whether each was given, and its value. */
function fieldParams(f: DeviceFields): unknown[] {
  return [
    f.environment !== undefined, f.environment ?? null,
    f.userId !== undefined, f.userId ?? null,
    f.locale !== undefined, f.locale ?? null,
    f.timezone !== undefined, f.timezone ?? null,
    f.tags !== undefined, f.tags ?? [],
  ];
}

/** `SET` of the optional fields from fieldParams at $from…: each given one replaces, the others stay. */
function fieldSets(from: number, table: string): string {
  return ['environment', 'user_id', 'locale', 'timezone', 'tags']
    .map((c, i) => `${c} = CASE WHEN $${from + 2 * i}::boolean THEN $${from + 2 * i + 1}${c === 'tags' ? '::text[]' : '::text'} ELSE ${table}.${c} END`)
    .join(', ');
}

/** push_devices: every statement names the account, so another account's device is simply not there. */
export class PushDeviceStore {
  /**
   * Registers a token of an app, or updates the device that has it: its user, fields given and platform change, and an
   * invalid device becomes active again (the app got the token from the service just now).
   */
  async upsert(q: Queryable, accountId: string, appId: string, id: string, token: string, platform: PushPlatform, f: DeviceFields): Promise<{ device: PushDevice; created: boolean }> {
    const r = await q.query<DeviceRow>(
      `INSERT INTO push_devices (id, account_id, app_id, token, platform, environment, user_id, locale, timezone, tags)
       VALUES ($1, $2, $3, $4, $5, $7, $9, $11, $13, $15::text[])
       ON CONFLICT (app_id, token) DO UPDATE SET platform = EXCLUDED.platform, ${fieldSets(6, 'push_devices')},
         status = 'active', invalid_reason = NULL, invalidated_at = NULL, updated_at = now()
       RETURNING ${COLUMNS}`,
      [id, accountId, appId, token, platform, ...fieldParams(f)],
    );
    const device = toDevice(r.rows[0]);
    return { device, created: device.id === id };
  }

  async get(q: Queryable, accountId: string, id: string): Promise<PushDevice | null> {
    const r = await q.query<DeviceRow>(`SELECT ${COLUMNS} FROM push_devices WHERE id = $1 AND account_id = $2`, [id, accountId]);
    return r.rows[0] ? toDevice(r.rows[0]) : null;
  }

  async list(q: Queryable, accountId: string, f: DeviceFilter): Promise<PushDevice[]> {
    const r = await q.query<DeviceRow>(
      `SELECT ${COLUMNS} FROM push_devices WHERE account_id = $1
         AND ($2::text IS NULL OR app_id = $2) AND ($3::text IS NULL OR user_id = $3) AND ($4::text IS NULL OR platform = $4)
         AND ($5::text IS NULL OR status = $5) AND ($6::text IS NULL OR $6 = ANY(tags)) AND ($7::text IS NULL OR id < $7)
       ORDER BY id DESC LIMIT $8`,
      [accountId, f.appId ?? null, f.userId ?? null, f.platform ?? null, f.status ?? null, f.tag ?? null, f.before ?? null, f.limit],
    );
    return r.rows.map(toDevice);
  }

  /** Changes the fields given; null when the account has no such device. */
  async update(q: Queryable, accountId: string, id: string, f: DeviceFields): Promise<PushDevice | null> {
    const r = await q.query<DeviceRow>(
      `UPDATE push_devices SET ${fieldSets(3, 'push_devices')}, updated_at = now() WHERE id = $1 AND account_id = $2 RETURNING ${COLUMNS}`,
      [id, accountId, ...fieldParams(f)],
    );
    return r.rows[0] ? toDevice(r.rows[0]) : null;
  }

  /**
   * Locks the account's devices among `ids` until the transaction ends, in id order (two transactions never wait on
   * each other in a cycle): `update` before deleting them, `share` before subscribing them (a device being deleted is
   * waited for, then left out). Returns the ids found.
   */
  async lock(q: Queryable, accountId: string, ids: readonly string[], mode: 'update' | 'share'): Promise<string[]> {
    if (!ids.length) return [];
    const r = await q.query<{ id: string }>(
      `SELECT id FROM push_devices WHERE account_id = $1 AND id = ANY($2::text[]) ORDER BY id FOR ${mode === 'update' ? 'UPDATE' : 'KEY SHARE'}`,
      [accountId, ids],
    );
    return r.rows.map((x) => x.id);
  }

  /** The ids of a user's devices. */
  async idsOfUser(q: Queryable, accountId: string, userId: string): Promise<string[]> {
    const r = await q.query<{ id: string }>(`SELECT id FROM push_devices WHERE account_id = $1 AND user_id = $2 ORDER BY id`, [accountId, userId]);
    return r.rows.map((x) => x.id);
  }

  /** The ids of an app's devices. */
  async idsOfApp(q: Queryable, accountId: string, appId: string): Promise<string[]> {
    const r = await q.query<{ id: string }>(`SELECT id FROM push_devices WHERE account_id = $1 AND app_id = $2 ORDER BY id`, [accountId, appId]);
    return r.rows.map((x) => x.id);
  }

  /**
   * The user's devices beyond `max`, the one just registered (`keep`) never among them: invalid ones first, then the
   * least recently registered.
   */
  async beyondLimit(q: Queryable, accountId: string, userId: string, keep: string, max: number): Promise<string[]> {
    const r = await q.query<{ id: string }>(
      `SELECT id FROM push_devices WHERE account_id = $1 AND user_id = $2 AND id <> $3 ORDER BY (status = 'active'), updated_at, id`,
      [accountId, userId, keep],
    );
    const excess = r.rows.length + 1 - max;
    return excess > 0 ? r.rows.slice(0, excess).map((x) => x.id) : [];
  }

  async delete(q: Queryable, accountId: string, ids: readonly string[]): Promise<number> {
    if (!ids.length) return 0;
    const r = await q.query(`DELETE FROM push_devices WHERE account_id = $1 AND id = ANY($2::text[])`, [accountId, ids]);
    return r.rowCount;
  }
}
