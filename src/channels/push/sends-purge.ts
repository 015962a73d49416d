import type { Db } from '../../store/types.js';
import { idFloor } from '../../util/ids.js';
import { PUSH_SEND_ID_PREFIX } from './push-ids.js';

const DAY_MS = 86_400_000;

/**
 * Deletes completed sends older than push.retentionDays, their outcomes with them (ON DELETE CASCADE), in batches.
 * The scan is bounded by the primary key (send ids are time-sortable, made with PUSH_SEND_ID_PREFIX); created_at
 * decides.
 */
export class SendsPurge {
  constructor(
    private readonly o: { db: Db; retentionDays: number; batchRows?: number; maxRowsPerPass?: number; clock?: () => number },
  ) {}

  /** One pass; returns how many sends it deleted. */
  async runOnce(signal?: AbortSignal): Promise<number> {
    const cutoff = (this.o.clock ?? Date.now)() - this.o.retentionDays * DAY_MS;
    const batch = this.o.batchRows ?? 1000;
    const max = this.o.maxRowsPerPass ?? 100_000;
    let deleted = 0;
    while (deleted < max && !signal?.aborted) {
      const r = await this.o.db.query(
        `DELETE FROM push_sends WHERE id IN (
           SELECT id FROM push_sends WHERE id < $1 AND status = 'completed' AND created_at < $2 ORDER BY id LIMIT $3)`,
        [idFloor(PUSH_SEND_ID_PREFIX, cutoff), new Date(cutoff).toISOString(), Math.min(batch, max - deleted)],
      );
      deleted += r.rowCount;
      if (r.rowCount < batch) break;
    }
    return deleted;
  }
}
