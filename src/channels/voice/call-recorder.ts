import { randomUUID } from 'node:crypto';
import type { ModuleHolds } from '../../billing/balance-holds.js';
import type { OutboundPipeline } from '../../outbound/outbound-pipeline.js';
import { StateMachine } from '../../outbound/index.js';
import type { ModuleEvents } from '../../platform/event-sink.js';
import type { Db, Queryable } from '../../store/types.js';
import type { Call, CallChange } from './call.js';
import { billableSeconds, costMicros, type BillingIncrement } from './call-pricing.js';
import { callbackEventOf, canMove, eventOf, isFinal } from './call-status.js';
import type { CallStore } from './call-store.js';
import { callView } from './call-view.js';

/** A status callback as its job carries it: the URL and the exact body signed at send time. */
export interface StatusCallbackPayload {
  url: string;
  callbackId: string;
  body: string;
}

/** Status callbacks are jobs of the outbound pipeline (product voice, provider voice-callback): durable, retried, per-host breaker. */
export const VOICE_CALLBACK_MACHINE = new StateMachine({
  product: 'voice',
  initial: 'queued',
  sent: 'sent',
  failed: 'failed',
  states: { queued: { rank: 0 }, sent: { rank: 1, final: true }, failed: { rank: 9, final: true } },
});

/**
 * Every status change of a call, in one transaction: the row and its history, the webhook event, the status callback
 * job when the call asked for that event, and at a final status the credit settled (what the call used, the rest of
 * its hold credited back). A change the status table does not allow (a late response, a second end) changes nothing.
 */
export class CallRecorder {
  constructor(
    private readonly o: {
      db: Db;
      store: CallStore;
      events: ModuleEvents;
      holds: ModuleHolds;
      pipeline: () => OutboundPipeline;
      increment: BillingIncrement;
    },
  ) {}

  /** Applies `change` to the call; the call after it, or null when the move was not allowed (nothing written). */
  async apply(
    id: string,
    change: CallChange,
    owner: { id: string; leaseMs: number } | null = null,
    /** Checked in the change's transaction after the row is locked: false leaves everything as it was. */
    admit?: (q: Queryable, call: Call) => Promise<boolean>,
  ): Promise<Call | null> {
    const jobs: Array<Awaited<ReturnType<OutboundPipeline['enqueue']>>[number]> = [];
    const out = await this.o.db.tx(async (q) => {
      const current = await this.o.store.lock(q, id);
      if (!current || !canMove(current.status, change.status)) return null;
      if (admit && !(await admit(q, current))) return null;
      let after = await this.o.store.record(q, id, change, owner);
      if (isFinal(after.status)) after = await this.settle(q, after);
      const type = eventOf(after.status);
      const data = callView(after);
      if (type) await this.o.events.emit(q, { accountId: after.accountId, type, data, messageKey: after.id });
      const cbEvent = callbackEventOf(after.status);
      if (after.statusCallback && cbEvent && after.statusCallbackEvents.includes(cbEvent)) {
        const callbackId = `vcb_${randomUUID()}`;
        const body = JSON.stringify({ type: `call.${cbEvent}`, callbackId, timestamp: new Date().toISOString(), data });
        const payload: StatusCallbackPayload = { url: after.statusCallback, callbackId, body };
        jobs.push(...(await this.o.pipeline().enqueue(q, [{ product: 'voice', provider: 'voice-callback', accountId: after.accountId, messageId: after.id, payload }])));
      }
      return after;
    });
    if (out) {
      this.o.events.wake();
      if (jobs.length) this.o.pipeline().wake(jobs);
    }
    return out;
  }

  /** What a new dial attempt learnt (trunk, SIP Call-ID) without a status move: the row only, no history, no event. */
  async annotate(id: string, change: Pick<CallChange, 'trunk' | 'trunksTried' | 'sipCallId' | 'answeredBy'>): Promise<void> {
    await this.o.db.query(
      `UPDATE voice_calls SET trunk = COALESCE($2, trunk), trunks_tried = COALESCE($3::text[], trunks_tried), sip_call_id = COALESCE($4, sip_call_id),
         answered_by = COALESCE($5, answered_by) WHERE id = $1`,
      [id, change.trunk ?? null, change.trunksTried ?? null, change.sipCallId ?? null, change.answeredBy ?? null],
    );
  }

  /** At a final status: the seconds billed from answer to end (database times), the cost, and the hold settled. */
  private async settle(q: Queryable, call: Call): Promise<Call> {
    const seconds = call.answeredAt && call.endedAt ? (call.endedAt.getTime() - call.answeredAt.getTime()) / 1000 : 0;
    // Never more than the credit held for: a call is cut at its time limit, and a late BYE must not bill past it.
    const billable = Math.min(billableSeconds(seconds, this.o.increment), billableSeconds(call.heldSeconds, this.o.increment));
    const cost = costMicros(call.pricePerMinuteMicros, billable);
    await this.o.holds.settle(q, call.id, cost);
    const { rows } = await q.query<{ id: string }>(`UPDATE voice_calls SET billable_s = $2, cost_micros = $3 WHERE id = $1 RETURNING id`, [call.id, billable, cost]);
    return rows.length ? { ...call, billableSeconds: billable, costMicros: cost } : call;
  }
}
