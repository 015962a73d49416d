import type { Logger } from 'pino';
import type { CallRecorder } from './call-recorder.js';
import type { CallStore } from './call-store.js';

/**
 * Ends the calls whose owning instance stopped renewing its claim (it crashed, or lost the database): their SIP
 * dialog and RTP socket died with it, so nobody can carry them on. Each ends `failed` with OWNER_LOST, at its owner's
 * last renewal (billed up to then), with its event and callback. The far end hears the call drop when the owner died;
 * Ferry can send it no BYE, the dialog's state was in the dead process.
 */
export class OrphanSweep {
  constructor(private readonly o: { store: CallStore; recorder: CallRecorder; leaseMs: number; log: Logger }) {}

  /** With `stoppedOwner` (an earlier life of this instance): its calls, now, without waiting for their claims to lapse. */
  async runOnce(stoppedOwner: string | null = null): Promise<number> {
    let ended = 0;
    for (const orphan of await this.o.store.orphans(100, this.o.leaseMs, stoppedOwner)) {
      const done = await this.o.recorder.apply(
        orphan.id,
        {
          status: 'failed',
          errorCode: 'OWNER_LOST',
          errorReason: `the instance carrying the call (${orphan.owner ?? 'unknown'}) stopped; the call was cut when it did`,
          endedAt: orphan.lastRenewal,
          detail: { owner: orphan.owner, lastRenewal: orphan.lastRenewal.toISOString() },
        },
        null,
        stoppedOwner ? undefined : (q) => this.o.store.lapsed(q, orphan.id),
      );
      if (done) {
        ended++;
        this.o.log.warn({ callId: orphan.id, owner: orphan.owner }, 'voice call ended: the instance carrying it stopped');
      }
    }
    return ended;
  }
}
