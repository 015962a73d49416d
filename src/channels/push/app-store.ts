import type { Queryable } from '../../store/types.js';
import type { PushApp, PushEndpoints, PushProviderService } from './push-app.js';

interface AppRow {
  id: string;
  account_id: string;
  name: string;
  fcm_project_id: string | null;
  apns_bundle_id: string | null;
  apns_environment: 'sandbox' | 'production' | null;
  endpoints: PushEndpoints | string;
  paused_service: string | null;
  paused_reason: string | null;
  paused_at: Date | string | null;
  created_at: Date | string;
  updated_at: Date | string;
}

const COLUMNS = `id, account_id, name, fcm_project_id, apns_bundle_id, apns_environment, endpoints, paused_service, paused_reason, paused_at, created_at, updated_at`;

function toApp(r: AppRow): PushApp {
  return {
    id: r.id,
    accountId: r.account_id,
    name: r.name,
    fcmProjectId: r.fcm_project_id,
    apnsBundleId: r.apns_bundle_id,
    apnsEnvironment: r.apns_environment,
    endpoints: typeof r.endpoints === 'string' ? (JSON.parse(r.endpoints) as PushEndpoints) : r.endpoints,
    paused: r.paused_service ? { service: r.paused_service, reason: r.paused_reason, at: new Date(r.paused_at ?? r.updated_at) } : null,
    createdAt: new Date(r.created_at),
    updatedAt: new Date(r.updated_at),
  };
}

/** What a create or an update writes of an app (the public parts of its credentials included). */
export interface AppFields {
  name: string;
  fcmProjectId: string | null;
  apnsBundleId: string | null;
  apnsEnvironment: 'sandbox' | 'production' | null;
  endpoints: PushEndpoints;
}

/** push_apps: every statement names the account, so another account's app is simply not there. */
export class PushAppStore {
  async insert(q: Queryable, id: string, accountId: string, f: AppFields): Promise<PushApp> {
    const r = await q.query<AppRow>(
      `INSERT INTO push_apps (id, account_id, name, fcm_project_id, apns_bundle_id, apns_environment, endpoints)
       VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb) RETURNING ${COLUMNS}`,
      [id, accountId, f.name, f.fcmProjectId, f.apnsBundleId, f.apnsEnvironment, JSON.stringify(f.endpoints)],
    );
    return toApp(r.rows[0]);
  }

  /**
   * The app, or null. `lock` holds its row until the transaction ends: `update` to change or delete it, `share` to
   * register a device to it (a deletion waits for the registration, or the registration for the deletion).
   */
  async get(q: Queryable, accountId: string, id: string, lock?: 'update' | 'share'): Promise<PushApp | null> {
    const suffix = lock === 'update' ? ' FOR UPDATE' : lock === 'share' ? ' FOR KEY SHARE' : '';
    const r = await q.query<AppRow>(`SELECT ${COLUMNS} FROM push_apps WHERE id = $1 AND account_id = $2${suffix}`, [id, accountId]);
    return r.rows[0] ? toApp(r.rows[0]) : null;
  }

  /** Newest first, ids below `before`. */
  async list(q: Queryable, accountId: string, before: string | undefined, limit: number): Promise<PushApp[]> {
    const r = await q.query<AppRow>(
      `SELECT ${COLUMNS} FROM push_apps WHERE account_id = $1 AND ($2::text IS NULL OR id < $2) ORDER BY id DESC LIMIT $3`,
      [accountId, before ?? null, limit],
    );
    return r.rows.map(toApp);
  }

  /** Writes the fields; a service in `unpause` whose credentials changed no longer holds the app's sends. */
  async update(q: Queryable, accountId: string, id: string, f: AppFields, unpause: readonly PushProviderService[]): Promise<PushApp | null> {
    const r = await q.query<AppRow>(
      `UPDATE push_apps SET name = $3, fcm_project_id = $4, apns_bundle_id = $5, apns_environment = $6, endpoints = $7::jsonb,
         paused_service = CASE WHEN paused_service = ANY($8::text[]) THEN NULL ELSE paused_service END,
         paused_reason = CASE WHEN paused_service = ANY($8::text[]) THEN NULL ELSE paused_reason END,
         paused_at = CASE WHEN paused_service = ANY($8::text[]) THEN NULL ELSE paused_at END,
         updated_at = now()
       WHERE id = $1 AND account_id = $2 RETURNING ${COLUMNS}`,
      [id, accountId, f.name, f.fcmProjectId, f.apnsBundleId, f.apnsEnvironment, JSON.stringify(f.endpoints), unpause],
    );
    return r.rows[0] ? toApp(r.rows[0]) : null;
  }

  /** Deletes the app (its devices and their subscriptions go with it, ON DELETE CASCADE); false when it was not there. */
  async delete(q: Queryable, accountId: string, id: string): Promise<boolean> {
    const r = await q.query(`DELETE FROM push_apps WHERE id = $1 AND account_id = $2`, [id, accountId]);
    return r.rowCount > 0;
  }
}
