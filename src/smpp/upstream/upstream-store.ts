import { lazyValidator } from '../../util/lazy-validator.js';
import { upstreamSchema, type UpstreamConfig } from '../../config/schema.js';
import type { SecretCipher } from '../../security/cipher.js';
import type { Db } from '../../store/types.js';

// Same options as the config loader, so stored entries get the defaults of the running version.
const validate = lazyValidator(upstreamSchema);

const KEY = 'upstreams.runtime';

/** What is stored per upstream: the config with the password only in encrypted form. */
type StoredUpstream = Omit<UpstreamConfig, 'password'> & { passwordEncrypted: string };

export interface UpstreamStoreOptions {
  /** A stored entry that cannot be used (its key is gone, or it no longer validates); it is skipped, not fatal. */
  onUnreadable?: (id: string, reason: string) => void;
}

const SAVE_SQL = `INSERT INTO settings (key, value) VALUES ($1, jsonb_build_object($2::text, $3::jsonb))
  ON CONFLICT (key) DO UPDATE SET value = settings.value || EXCLUDED.value, updated_at = now()`;
const REMOVE_SQL = `UPDATE settings SET value = value - $2::text, updated_at = now() WHERE key = $1 AND (value -> $2::text) IS NOT NULL`;

/**
 * Upstreams added at runtime (admin API), kept in the settings row `upstreams.runtime` as id → config. Passwords
 * are encrypted with the SecretCipher and never leave this class in any form but the decrypted config the pool
 * needs. Runtime entries override config-file entries with the same id (see `merge`). Each save or remove touches
 * one id inside the row, so concurrent changes of different upstreams do not overwrite each other.
 */
export class UpstreamStore {
  /** What API responses show instead of a password. */
  static readonly MASK = '********';

  constructor(
    private readonly db: Db,
    private readonly cipher: SecretCipher,
    private readonly opts: UpstreamStoreOptions = {},
  ) {}

  /** Every usable runtime upstream, decrypted and with current defaults filled in, in id order. */
  async load(): Promise<UpstreamConfig[]> {
    const out: UpstreamConfig[] = [];
    for (const [id, entry] of Object.entries(await this.read()).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      const config = this.decode(id, entry);
      if (config) out.push(config);
    }
    return out;
  }

  async get(id: string): Promise<UpstreamConfig | null> {
    const entry = (await this.read())[id];
    return entry === undefined ? null : this.decode(id, entry);
  }

  /** Ids stored (readable or not), without decrypting anything. */
  async ids(): Promise<string[]> {
    return Object.keys(await this.read()).sort();
  }

  /** Adds or replaces one upstream. Throws when the config does not match the upstream schema. */
  async save(config: UpstreamConfig): Promise<void> {
    const checked = structuredClone(config);
    if (!validate(checked)) throw new Error(`upstream ${config.id}: ${describeErrors(validate.errors)}`);
    const { password, ...rest } = checked as UpstreamConfig;
    const stored: StoredUpstream = { ...rest, passwordEncrypted: this.cipher.encrypt(password) };
    await this.db.query(SAVE_SQL, [KEY, config.id, JSON.stringify(stored)]);
  }

  /** False when no runtime upstream had that id. */
  async remove(id: string): Promise<boolean> {
    const r = await this.db.query(REMOVE_SQL, [KEY, id]);
    return r.rowCount > 0;
  }

  /** The config as shown to operators: the password masked. */
  static redact<T extends { password?: unknown }>(config: T): Omit<T, 'password'> & { password: string } {
    return { ...config, password: UpstreamStore.MASK };
  }

  /** The daemon's upstream list: config-file entries in order (a runtime one with the same id takes its place), then runtime-only ones. */
  static merge(fromFile: readonly UpstreamConfig[], runtime: readonly UpstreamConfig[]): UpstreamConfig[] {
    const byId = new Map(runtime.map((c) => [c.id, c]));
    const out = fromFile.map((c) => byId.get(c.id) ?? c);
    const fileIds = new Set(fromFile.map((c) => c.id));
    for (const c of runtime) if (!fileIds.has(c.id)) out.push(c);
    return out;
  }

  private async read(): Promise<Record<string, unknown>> {
    const { rows } = await this.db.query<{ value: unknown }>(`SELECT value FROM settings WHERE key = $1`, [KEY]);
    const value = rows[0]?.value;
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  }

  private decode(id: string, entry: unknown): UpstreamConfig | null {
    if (!entry || typeof entry !== 'object') {
      this.opts.onUnreadable?.(id, 'not an object');
      return null;
    }
    const { passwordEncrypted, ...rest } = entry as Partial<StoredUpstream>;
    if (typeof passwordEncrypted !== 'string') {
      this.opts.onUnreadable?.(id, 'no encrypted password');
      return null;
    }
    let password: string;
    try {
      password = this.cipher.decrypt(passwordEncrypted);
    } catch (err) {
      this.opts.onUnreadable?.(id, `password cannot be decrypted: ${(err as Error).message}`);
      return null;
    }
    const config = { ...rest, id, password };
    if (!validate(config)) {
      this.opts.onUnreadable?.(id, describeErrors(validate.errors));
      return null;
    }
    return config as UpstreamConfig;
  }
}

function describeErrors(errors: typeof validate.errors): string {
  return (errors ?? []).map((e) => `${e.instancePath.slice(1).replace(/\//g, '.') || '(top level)'} ${e.message ?? 'is not valid'}`).join('; ');
}
