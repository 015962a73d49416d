import { lazyValidator } from '../../util/lazy-validator.js';
import type { Logger } from 'pino';
import { SecretCipher } from '../../security/cipher.js';
import type { Db } from '../../store/types.js';
import { trunkSchema, type TrunkConfig } from './config.js';

const validateTrunk = lazyValidator(trunkSchema);

export interface Trunk extends TrunkConfig {
  /** config: from the config file (read-only at runtime); runtime: added through the admin API or CLI. */
  source: 'config' | 'runtime';
}

/** What the admin API and CLI show of a trunk: never its password. */
export function trunkView(t: Trunk) {
  const { password, ...rest } = t;
  return { ...rest, passwordSet: password !== null && password !== '' };
}

/** A trunk given to the admin API: validated with the config schema's defaults. Throws with every problem named. */
export function readTrunk(input: unknown): TrunkConfig {
  const copy = JSON.parse(JSON.stringify(input ?? {})) as TrunkConfig;
  if (!validateTrunk(copy)) {
    const detail = (validateTrunk.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`).join('; ');
    throw new TrunkInputError(detail);
  }
  return copy;
}

export class TrunkInputError extends Error {}

/**
 * The SIP trunks calls may take: the config file's and those added at runtime (table voice_trunks, the password sealed
 * with a key derived for voice trunks); a runtime trunk of the same name replaces the file's. Every instance reloads
 * the runtime ones (refresh) so an admin change reaches all of them. Health comes from OPTIONS keep-alives: a trunk
 * that stopped answering is tried after those that answer.
 */
export class TrunkRegistry {
  private trunks: Trunk[] = [];
  private readonly unhealthy = new Set<string>();
  private readonly cipher: SecretCipher;
  private readonly fromConfig: TrunkConfig[];

  constructor(
    private readonly o: { db: Db; key: Buffer; fromConfig: readonly TrunkConfig[]; log: Logger },
  ) {
    this.cipher = new SecretCipher({ current: { id: SecretCipher.keyIdOf(o.key), key: o.key } });
    this.fromConfig = [...o.fromConfig];
    this.trunks = this.fromConfig.map((t) => ({ ...t, source: 'config' as const }));
  }

  /** A trunk of this process's own (the embedded simulator): listed as the config file's are. */
  addSimulated(t: TrunkConfig): void {
    this.fromConfig.push(t);
    this.trunks = [...this.trunks.filter((x) => x.name !== t.name), { ...t, source: 'config' as const }].sort((a, b) => a.priority - b.priority || (a.name < b.name ? -1 : 1));
  }

  async refresh(): Promise<void> {
    const { rows } = await this.o.db.query<{ name: string; config: TrunkConfig | string; password_sealed: string | null }>(
      `SELECT name, config, password_sealed FROM voice_trunks ORDER BY name`,
    );
    const runtime: Trunk[] = [];
    for (const r of rows) {
      try {
        const config = readTrunk(typeof r.config === 'string' ? JSON.parse(r.config) : r.config);
        runtime.push({ ...config, name: r.name, password: r.password_sealed ? this.cipher.decrypt(r.password_sealed) : null, source: 'runtime' });
      } catch (err) {
        this.o.log.error({ trunk: r.name, err: (err as Error).message }, 'stored voice trunk is unreadable; skipped');
      }
    }
    const names = new Set(runtime.map((t) => t.name));
    this.trunks = [...this.fromConfig.filter((t) => !names.has(t.name)).map((t) => ({ ...t, source: 'config' as const })), ...runtime].sort(
      (a, b) => a.priority - b.priority || (a.name < b.name ? -1 : 1),
    );
  }

  list(): readonly Trunk[] {
    return this.trunks;
  }

  get(name: string): Trunk | undefined {
    return this.trunks.find((t) => t.name === name);
  }

  /** Adds or replaces a runtime trunk (every instance sees it at its next refresh). */
  async save(t: TrunkConfig): Promise<void> {
    const { password, ...config } = t;
    await this.o.db.query(
      `INSERT INTO voice_trunks (name, config, password_sealed) VALUES ($1, $2::jsonb, $3)
       ON CONFLICT (name) DO UPDATE SET config = EXCLUDED.config, password_sealed = EXCLUDED.password_sealed, updated_at = now()`,
      [t.name, JSON.stringify({ ...config, password: null }), password ? this.cipher.encrypt(password) : null],
    );
    await this.refresh();
  }

  async remove(name: string): Promise<boolean> {
    const { rowCount } = await this.o.db.query(`DELETE FROM voice_trunks WHERE name = $1`, [name]);
    await this.refresh();
    return rowCount > 0;
  }

  markHealth(name: string, answering: boolean): void {
    if (answering) this.unhealthy.delete(name);
    else this.unhealthy.add(name);
  }

  isHealthy(name: string): boolean {
    return !this.unhealthy.has(name);
  }

  /** Trunks that may carry a call from `from` to `to` (digits), in failover order: answering ones first, each by priority. */
  candidates(to: string, from: string): Trunk[] {
    const fit = this.trunks.filter(
      (t) =>
        (!t.destinationPrefixes.length || t.destinationPrefixes.some((p) => to.startsWith(p))) &&
        (!t.callerIdPrefixes.length || t.callerIdPrefixes.some((p) => from.startsWith(p))),
    );
    return [...fit.filter((t) => this.isHealthy(t.name)), ...fit.filter((t) => !this.isHealthy(t.name))];
  }
}
