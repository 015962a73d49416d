import type { StatusOutcome } from './types.js';

export interface StateDef {
  /** Order of progress: a state moves only to a higher rank. */
  rank: number;
  /** Nothing moves on from here (read, failed, bounced): a later update is recorded as late. */
  final?: boolean;
  /** The event a change into this state emits, without the product prefix (`sent` → `messenger.sent`); none if absent. */
  event?: string;
}

export interface StateMachineSpec {
  /** The product's name: events are `<product>.<event>`. */
  product: string;
  /** The state a job is enqueued in; the only state the pipeline sends from. */
  initial: string;
  /** Where a `sent` result moves the job (unless the product's resultState hook says otherwise). */
  sent: string;
  /** Where a permanent failure or the deadline moves the job; final. */
  failed: string;
  states: Readonly<Record<string, StateDef>>;
}

/**
 * A product's status state machine, in one table: states with a rank, moving only forward. An update to a lower or
 * equal rank, or out of a final state, is `late`: recorded in the history, not applied (a `delivered` arriving after
 * `read` does not demote). The same state again is `unchanged`; an unknown state is `invalid`.
 */
export class StateMachine {
  readonly product: string;
  readonly initial: string;
  readonly sent: string;
  readonly failed: string;
  private readonly states: ReadonlyMap<string, StateDef>;

  constructor(spec: StateMachineSpec) {
    if (!/^[a-z][a-z0-9_]*$/.test(spec.product)) throw new Error(`product name ${JSON.stringify(spec.product)}: lower case letters, digits, _`);
    this.product = spec.product;
    this.states = new Map(Object.entries(spec.states));
    for (const role of ['initial', 'sent', 'failed'] as const) {
      if (!this.states.has(spec[role])) throw new Error(`${spec.product}: the ${role} state ${spec[role]} is not in the table`);
    }
    this.initial = spec.initial;
    this.sent = spec.sent;
    this.failed = spec.failed;
    const init = this.states.get(spec.initial)!;
    if (init.final) throw new Error(`${spec.product}: the initial state cannot be final`);
    if (!this.states.get(spec.failed)!.final) throw new Error(`${spec.product}: the failed state must be final`);
    for (const [name, def] of this.states) {
      if (name !== spec.initial && def.rank <= init.rank) throw new Error(`${spec.product}: state ${name} must rank above the initial state`);
      if (def.event !== undefined && !/^[a-z][a-z0-9_]*$/.test(def.event)) throw new Error(`${spec.product}: event ${def.event} of state ${name}`);
    }
  }

  has(state: string): boolean {
    return this.states.has(state);
  }

  isFinal(state: string): boolean {
    return this.states.get(state)?.final === true;
  }

  rank(state: string): number | undefined {
    return this.states.get(state)?.rank;
  }

  /** The full event type a change into `state` emits (`messenger.sent`), or null. */
  eventOf(state: string): string | null {
    const e = this.states.get(state)?.event;
    return e ? `${this.product}.${e}` : null;
  }

  /** Every event type the machine emits (each must be registered in the catalogue). */
  eventTypes(): string[] {
    const out = new Set<string>();
    for (const s of this.states.keys()) {
      const e = this.eventOf(s);
      if (e) out.add(e);
    }
    return [...out];
  }

  stateNames(): string[] {
    return [...this.states.keys()];
  }

  /** How a move from `from` to `to` is taken. */
  decide(from: string, to: string): Exclude<StatusOutcome, 'not_found'> {
    const a = this.states.get(from);
    const b = this.states.get(to);
    if (!a || !b) return 'invalid';
    if (from === to) return 'unchanged';
    if (a.final) return 'late';
    return b.rank > a.rank ? 'changed' : 'late';
  }
}
