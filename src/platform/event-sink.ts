import type { Logger } from 'pino';
import { isEventType, type EventType } from '../events/catalogue.js';
import type { NewEvent } from '../events/event-outbox.js';
import type { Queryable } from '../store/types.js';

/** One event a module emits (`type` from its own catalogue entry). */
export interface ModuleEvent {
  accountId: string;
  type: EventType;
  data: Record<string, unknown>;
  /** Events with the same key reach an endpoint in order (a message, session or OTP id); default none. */
  messageKey?: string | null;
}

/**
 * Where events go: provided by the module that owns the events table and its delivery (webhooks), registered in its
 * create() through `ctx.events.provide`. Products see only ModuleEvents.
 */
export interface EventSink {
  /** Writes events through the caller's Queryable (so they commit with its change); returns how many were kept. */
  insert(q: Queryable, events: readonly NewEvent[]): Promise<number>;
  /** Writes events in their own statement (possibly shared with concurrent callers), then wakes delivery. */
  insertNow(events: readonly NewEvent[]): Promise<void>;
  /** Delivery looks for new events now (after a commit), instead of at its next poll. */
  wake(): void;
  /** The accounts among these with an enabled endpoint taking `type` (to skip building events nobody receives). */
  subscribed(q: Queryable, accountIds: readonly string[], type: EventType): Promise<Set<string>>;
}

/** What every module gets as `ctx.events`. */
export interface ModuleEvents {
  /**
   * Writes events inside the caller's transaction `q`, so they commit (or roll back) with the change that caused them;
   * call wake() after the commit. Returns how many were stored (events no endpoint subscribes to are dropped).
   * Throws when a type is not in this module's catalogue.
   */
  emit(q: Queryable, events: ModuleEvent | readonly ModuleEvent[]): Promise<number>;
  /** Writes events now, outside any transaction of the caller (a crash just before loses them), and wakes delivery. */
  emitNow(events: ModuleEvent | readonly ModuleEvent[]): Promise<void>;
  /** After the transaction of emit() committed: delivery picks the events up now. */
  wake(): void;
  /** The accounts among these with an enabled endpoint taking `type` (none while no sink is registered). */
  subscribed(q: Queryable, accountIds: readonly string[], type: EventType): Promise<Set<string>>;
  /** The module that owns delivery registers its sink (once per daemon). */
  provide(sink: EventSink): void;
}

/**
 * The daemon's one slot for the sink, late-bound: modules created before the provider (or without one, in tests) emit
 * through the slot, and events emitted while no sink is registered are dropped with one warning (nobody could receive
 * them: there are no endpoints without the webhooks module).
 */
export class EventSinkSlot {
  private sink: EventSink | null = null;
  private warned = false;

  constructor(private readonly log?: Logger) {}

  get provided(): boolean {
    return this.sink !== null;
  }

  provide(sink: EventSink, by: string): void {
    if (this.sink) throw new Error(`module ${by} provides an event sink, but one is already registered`);
    this.sink = sink;
  }

  current(): EventSink | null {
    if (!this.sink && !this.warned) {
      this.warned = true;
      this.log?.warn('events emitted while no module delivers them (the webhooks module is not running): dropped');
    }
    return this.sink;
  }

  /**
   * `ctx.events` of one module: a type must be in the catalogue and the module's: declared in its `events`, or of its
   * own family (`<module>.…`: the built-in otp.* of OTP, types a product registers when it loads).
   */
  forModule(module: { name: string; events?: Readonly<Record<string, unknown>> }): ModuleEvents {
    const declared = new Set(Object.keys(module.events ?? {}));
    const own = (type: string) => isEventType(type) && (declared.has(type) || type.slice(0, type.indexOf('.')) === module.name);
    const check = (list: readonly ModuleEvent[]): NewEvent[] =>
      list.map((e) => {
        if (!own(e.type)) throw new Error(`module ${module.name} emits event type ${JSON.stringify(e.type)}, which is not in its catalogue (its events declaration)`);
        return { accountId: e.accountId, type: e.type, messageKey: e.messageKey ?? null, data: e.data };
      });
    const listOf = (events: ModuleEvent | readonly ModuleEvent[]): readonly ModuleEvent[] => (Array.isArray(events) ? events : [events as ModuleEvent]);
    return {
      emit: async (q, events) => {
        const list = check(listOf(events));
        const sink = this.current();
        return list.length && sink ? sink.insert(q, list) : 0;
      },
      emitNow: async (events) => {
        const list = check(listOf(events));
        const sink = this.current();
        if (list.length && sink) await sink.insertNow(list);
      },
      wake: () => this.sink?.wake(),
      subscribed: async (q, accountIds, type) => (this.sink && accountIds.length ? this.sink.subscribed(q, accountIds, type) : new Set<string>()),
      provide: (sink) => this.provide(sink, module.name),
    };
  }
}
