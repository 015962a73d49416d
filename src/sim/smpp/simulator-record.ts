import type { Db } from '../../store/types.js';

/** The upstream id the embedded SMSC simulator binds under. */
export const SIMULATOR_UPSTREAM_ID = 'embedded';

export type SimulatorMode = 'auto' | 'on' | 'off';

/** When the embedded simulator stopped being an upstream for good, and which real upstream caused it. */
export interface SimulatorRetirement {
  retiredAt: string;
  upstream: string;
}

const KEY = 'upstreams.simulator';
// The first real upstream wins; later ones do not move the date.
const RETIRE_SQL = `INSERT INTO settings (key, value) VALUES ($1, jsonb_build_object('retiredAt', $2::text, 'upstream', $3::text))
  ON CONFLICT (key) DO NOTHING`;

/**
 * Remembers, in the settings row `upstreams.simulator`, that a real upstream has existed. From then on the
 * simulator is never an upstream in `auto` mode again, on any instance sharing the database, even when every real
 * upstream is later removed: a message must wait or fail, never look delivered because a carrier went away.
 */
export class SimulatorRecord {
  constructor(private readonly db: Db) {}

  async read(): Promise<SimulatorRetirement | null> {
    const { rows } = await this.db.query<{ value: unknown }>(`SELECT value FROM settings WHERE key = $1`, [KEY]);
    const v = rows[0]?.value as Partial<SimulatorRetirement> | undefined;
    return v && typeof v.retiredAt === 'string' && typeof v.upstream === 'string' ? { retiredAt: v.retiredAt, upstream: v.upstream } : null;
  }

  async retire(upstream: string, at = new Date()): Promise<void> {
    await this.db.query(RETIRE_SQL, [KEY, at.toISOString(), upstream]);
  }
}

/**
 * Whether the embedded simulator runs as an upstream at start-up. `on` is the operator naming it explicitly; `auto`
 * runs it only when no real upstream exists from any source (config file, admin API) and none ever did.
 */
export function simulatorDecision(
  mode: SimulatorMode,
  realUpstreams: readonly string[],
  retired: SimulatorRetirement | null,
): { start: boolean; reason: string } {
  if (mode === 'off') return { start: false, reason: 'smpp.simulator.enabled is off' };
  if (mode === 'on') {
    return {
      start: true,
      reason: realUpstreams.length
        ? `smpp.simulator.enabled is on: the simulator runs, but only routing rules that name "${SIMULATOR_UPSTREAM_ID}" alone send to it`
        : 'smpp.simulator.enabled is on',
    };
  }
  if (realUpstreams.length) return { start: false, reason: `real upstreams are configured (${realUpstreams.join(', ')})` };
  if (retired) {
    return {
      start: false,
      reason: `real upstream ${retired.upstream} was configured at ${retired.retiredAt}; the simulator is not used for traffic again (set smpp.simulator.enabled: on to use it explicitly)`,
    };
  }
  return { start: true, reason: 'no upstream is configured' };
}
