import { createHmac } from 'node:crypto';
import type { Db, Queryable } from '../store/types.js';
import { SecretCipher } from './cipher.js';

/** What a read through an API shows of a credential: never the value, a keyed fingerprint of it. */
export interface CredentialView {
  accountId: string;
  name: string;
  version: number;
  /** `hmac-sha256:<16 hex>`: says whether two values differ, nothing more. */
  fingerprint: string;
  /** The value before the last rotation, still readable until `previousUntil` (ISO time), if any. */
  previous: { fingerprint: string; until: string } | null;
  createdAt: string;
  updatedAt: string;
}

/** A credential opened, for the module's own use (sending, verifying): never for an answer or a log line. */
export interface OpenedCredential {
  accountId: string;
  name: string;
  value: string;
  /** The value before the last rotation while its grace period lasts (e.g. to verify a signature made with it). */
  previous: string | null;
  version: number;
}

/** What every module gets as `ctx.credentials`: its own credentials, per account and name. */
export interface ModuleCredentials {
  /** Stores (or replaces without grace) a credential; `q` to write in the caller's transaction. */
  put(accountId: string, name: string, value: string, q?: Queryable): Promise<CredentialView>;
  /** The current value, or null. */
  get(accountId: string, name: string): Promise<string | null>;
  /** Several credentials opened: of one account or every account, by exact names or a name prefix. */
  open(filter: { accountId?: string; names?: readonly string[]; prefix?: string }): Promise<OpenedCredential[]>;
  /** A new value; the old one stays readable (as `previous`) for graceMs. Null when there is no such credential. */
  rotate(accountId: string, name: string, value: string, graceMs?: number, q?: Queryable): Promise<CredentialView | null>;
  /** Removes credentials (one name, or those under a prefix, or all of the account's); returns how many. */
  remove(accountId: string, which?: { name?: string; prefix?: string }, q?: Queryable): Promise<number>;
  /** Fingerprints only. */
  list(accountId: string, prefix?: string): Promise<CredentialView[]>;
  /** The fingerprint of a value (as list() shows it). */
  fingerprint(value: string): string;
}

type Row = {
  account_id: string;
  name: string;
  sealed: string;
  version: number;
  previous_sealed: string | null;
  previous_until: string | number | null;
  created_at: string | number;
  updated_at: string | number;
};

const LIKE_ESCAPE = /[\\%_]/g;

/**
 * The per-account credential store of one module (table provider_credentials, migration 0038). Values are sealed with
 * AES-256-GCM under a key derived for the module (`<module>-credentials`), fingerprints keyed with
 * `<module>-credential-fingerprint`: the same derivations the messenger numbers used before the store, so their
 * ciphertexts moved here unchanged. Rows are read at each use (no cache: a rotation on one instance is seen by every
 * other at once).
 */
export class CredentialStore implements ModuleCredentials {
  private readonly cipher: SecretCipher;
  private readonly clock: () => number;

  constructor(
    private readonly o: { db: Db; module: string; sealKey: Buffer; fingerprintKey: Buffer; clock?: () => number },
  ) {
    this.cipher = new SecretCipher({ current: { id: SecretCipher.keyIdOf(o.sealKey), key: o.sealKey } });
    this.clock = o.clock ?? Date.now;
  }

  fingerprint(value: string): string {
    return 'hmac-sha256:' + createHmac('sha256', this.o.fingerprintKey).update(value).digest('hex').slice(0, 16);
  }

  private previousOf(r: Row): string | null {
    if (r.previous_sealed === null || r.previous_until === null || Number(r.previous_until) <= this.clock()) return null;
    return this.cipher.decrypt(r.previous_sealed);
  }

  private view(r: Row): CredentialView {
    const previous = this.previousOf(r);
    return {
      accountId: r.account_id,
      name: r.name,
      version: Number(r.version),
      fingerprint: this.fingerprint(this.cipher.decrypt(r.sealed)),
      previous: previous === null ? null : { fingerprint: this.fingerprint(previous), until: new Date(Number(r.previous_until)).toISOString() },
      createdAt: new Date(Number(r.created_at)).toISOString(),
      updatedAt: new Date(Number(r.updated_at)).toISOString(),
    };
  }

  async put(accountId: string, name: string, value: string, q: Queryable = this.o.db): Promise<CredentialView> {
    const now = this.clock();
    const { rows } = await q.query<Row>(
      `INSERT INTO provider_credentials (account_id, module, name, sealed, version, created_at, updated_at) VALUES ($1, $2, $3, $4, 1, $5, $5)
       ON CONFLICT (account_id, module, name) DO UPDATE SET sealed = EXCLUDED.sealed, version = provider_credentials.version + 1,
         previous_sealed = NULL, previous_until = NULL, updated_at = EXCLUDED.updated_at
       RETURNING *`,
      [accountId, this.o.module, name, this.cipher.encrypt(value), now],
    );
    return this.view(rows[0]);
  }

  async get(accountId: string, name: string): Promise<string | null> {
    const { rows } = await this.o.db.query<Row>(`SELECT sealed FROM provider_credentials WHERE account_id = $1 AND module = $2 AND name = $3`, [accountId, this.o.module, name]);
    return rows[0] ? this.cipher.decrypt(rows[0].sealed) : null;
  }

  async open(filter: { accountId?: string; names?: readonly string[]; prefix?: string }): Promise<OpenedCredential[]> {
    const where = ['module = $1'];
    const params: unknown[] = [this.o.module];
    if (filter.accountId !== undefined) where.push(`account_id = $${params.push(filter.accountId)}`);
    if (filter.names) where.push(`name = ANY($${params.push(filter.names)}::text[])`);
    if (filter.prefix !== undefined) where.push(`name LIKE $${params.push(filter.prefix.replace(LIKE_ESCAPE, '\\$&') + '%')}`);
    const { rows } = await this.o.db.query<Row>(`SELECT * FROM provider_credentials WHERE ${where.join(' AND ')} ORDER BY account_id, name`, params);
    return rows.map((r) => ({ accountId: r.account_id, name: r.name, value: this.cipher.decrypt(r.sealed), previous: this.previousOf(r), version: Number(r.version) }));
  }

  async rotate(accountId: string, name: string, value: string, graceMs = 0, q: Queryable = this.o.db): Promise<CredentialView | null> {
    const now = this.clock();
    const { rows } = await q.query<Row>(
      `UPDATE provider_credentials SET previous_sealed = CASE WHEN $5::bigint > 0 THEN sealed END, previous_until = CASE WHEN $5::bigint > 0 THEN $6::bigint + $5::bigint END,
         sealed = $4, version = version + 1, updated_at = $6
       WHERE account_id = $1 AND module = $2 AND name = $3 RETURNING *`,
      [accountId, this.o.module, name, this.cipher.encrypt(value), Math.max(0, Math.round(graceMs)), now],
    );
    return rows[0] ? this.view(rows[0]) : null;
  }

  async remove(accountId: string, which: { name?: string; prefix?: string } = {}, q: Queryable = this.o.db): Promise<number> {
    const where = ['account_id = $1', 'module = $2'];
    const params: unknown[] = [accountId, this.o.module];
    if (which.name !== undefined) where.push(`name = $${params.push(which.name)}`);
    if (which.prefix !== undefined) where.push(`name LIKE $${params.push(which.prefix.replace(LIKE_ESCAPE, '\\$&') + '%')}`);
    const r = await q.query(`DELETE FROM provider_credentials WHERE ${where.join(' AND ')}`, params);
    return r.rowCount;
  }

  async list(accountId: string, prefix?: string): Promise<CredentialView[]> {
    const params: unknown[] = [accountId, this.o.module];
    const like = prefix === undefined ? '' : ` AND name LIKE $${params.push(prefix.replace(LIKE_ESCAPE, '\\$&') + '%')}`;
    const { rows } = await this.o.db.query<Row>(`SELECT * FROM provider_credentials WHERE account_id = $1 AND module = $2${like} ORDER BY name`, params);
    return rows.map((r) => this.view(r));
  }
}
