import { EventEmitter } from 'node:events';
import type { BindType, Session } from '../session.js';

/** One customer session whose credentials checked out: it holds a bind slot of its system_id until it closes. */
export interface CustomerBind {
  session: Session;
  accountId: string;
  systemId: string;
  bindType: BindType;
  /** interface_version from the bind PDU (0x34 for v3.4, 0x50 for v5.0). */
  interfaceVersion: number;
  remoteAddress: string;
  /** True once the bind response went out. */
  bound: boolean;
}

export interface BindRegistryEvents {
  /** A receiver or transceiver bind of the account completed: receipts can flow to it. */
  receiverBound: [accountId: string, session: Session];
  /** A bound session of the account closed (any bind type). */
  unbound: [accountId: string, session: Session];
}

/**
 * Customer sessions by account, for bind limits (per system_id, counting binds still completing) and for the
 * receipt worker, which asks for an open receiver of an account to send deliver_sm to.
 */
export class BindRegistry extends EventEmitter<BindRegistryEvents> {
  private readonly bySession = new Map<Session, CustomerBind>();
  private readonly boundByAccount = new Map<string, CustomerBind[]>();
  private readonly slotsBySystemId = new Map<string, number>();
  private readonly cursorByAccount = new Map<string, number>();

  /**
   * Takes one of the system_id's `maxBinds` slots for a session being bound. False (and nothing held) when the
   * slots are all taken or the session already closed. The slot is released when the session closes.
   */
  admit(session: Session, bind: Omit<CustomerBind, 'session' | 'bound'>, maxBinds: number): boolean {
    if (session.closed || this.bySession.has(session)) return false;
    const used = this.slotsBySystemId.get(bind.systemId) ?? 0;
    if (used >= maxBinds) return false;
    this.slotsBySystemId.set(bind.systemId, used + 1);
    const entry: CustomerBind = { ...bind, session, bound: false };
    this.bySession.set(session, entry);
    session.once('bound', () => this.onBound(entry));
    session.once('close', () => this.release(entry));
    return true;
  }

  /** The bind a session was admitted with. */
  bindOf(session: Session): CustomerBind | undefined {
    return this.bySession.get(session);
  }

  /** Every admitted session, bound or still binding. */
  sessions(): Session[] {
    return [...this.bySession.keys()];
  }

  /** Slots in use for a system_id (bound plus binding). */
  slotsInUse(systemId: string): number {
    return this.slotsBySystemId.get(systemId) ?? 0;
  }

  /** Bound sessions of the account, any bind type. */
  count(accountId: string): number {
    return this.boundByAccount.get(accountId)?.filter((b) => !b.session.closed).length ?? 0;
  }

  /** Bound sessions per bind type, all accounts (for the binds gauge). */
  countByBindType(): Record<BindType, number> {
    const counts: Record<BindType, number> = { transmitter: 0, receiver: 0, transceiver: 0 };
    for (const list of this.boundByAccount.values()) for (const b of list) if (!b.session.closed) counts[b.bindType]++;
    return counts;
  }

  /** Open receiver and transceiver sessions of the account. */
  receivers(accountId: string): Session[] {
    const list = this.boundByAccount.get(accountId);
    if (!list) return [];
    const out: Session[] = [];
    for (const b of list) if (b.bindType !== 'transmitter' && b.session.state === 'bound') out.push(b.session);
    return out;
  }

  /**
   * The account's next receiver in round-robin order, skipping sessions with a full window while another has room;
   * when none has room, the least loaded (its request() then waits in that session's queue).
   */
  pickReceiver(accountId: string): Session | undefined {
    const list = this.receivers(accountId);
    if (list.length === 0) return undefined;
    const start = (this.cursorByAccount.get(accountId) ?? 0) % list.length;
    for (let i = 0; i < list.length; i++) {
      const idx = (start + i) % list.length;
      if (list[idx].hasCapacity) {
        this.cursorByAccount.set(accountId, idx + 1);
        return list[idx];
      }
    }
    let best = list[start];
    for (const s of list) if (s.windowInUse + s.queued < best.windowInUse + best.queued) best = s;
    this.cursorByAccount.set(accountId, start + 1);
    return best;
  }

  /** Accounts with at least one open receiver or transceiver. */
  accountsWithReceivers(): string[] {
    const out: string[] = [];
    for (const accountId of this.boundByAccount.keys()) if (this.receivers(accountId).length > 0) out.push(accountId);
    return out;
  }

  private onBound(entry: CustomerBind): void {
    if (entry.session.closed || !this.bySession.has(entry.session)) return;
    entry.bound = true;
    const list = this.boundByAccount.get(entry.accountId) ?? [];
    list.push(entry);
    this.boundByAccount.set(entry.accountId, list);
    if (entry.bindType !== 'transmitter') this.emit('receiverBound', entry.accountId, entry.session);
  }

  private release(entry: CustomerBind): void {
    if (this.bySession.get(entry.session) !== entry) return;
    this.bySession.delete(entry.session);
    const used = (this.slotsBySystemId.get(entry.systemId) ?? 1) - 1;
    if (used > 0) this.slotsBySystemId.set(entry.systemId, used);
    else this.slotsBySystemId.delete(entry.systemId);
    if (!entry.bound) return;
    const list = this.boundByAccount.get(entry.accountId);
    if (list) {
      const rest = list.filter((b) => b !== entry);
      if (rest.length > 0) this.boundByAccount.set(entry.accountId, rest);
      else {
        this.boundByAccount.delete(entry.accountId);
        this.cursorByAccount.delete(entry.accountId);
      }
    }
    this.emit('unbound', entry.accountId, entry.session);
  }
}
