import { CommandStatus, DataCoding, EsmClass, MessageState, RegisteredDelivery, UssdServiceOp, messageStateFromStat } from '../../smpp/constants.js';
import type { BindPdu, Pdu, PduOf, Tlvs } from '../../smpp/pdu.js';
import { formatReceipt } from '../../smpp/receipt.js';
import { formatSmppAbsolute } from '../../smpp/time.js';
import { SmppServer } from '../../smpp/server.js';
import { NO_RESPONSE, type BindDecision, type ResponseFields, type Session } from '../../smpp/session.js';
import { decodeText, encodeText, encodeWith } from '../../smpp/text/encoding.js';
import { splitMessage } from '../../smpp/text/segments.js';
import { messageParts } from '../../smpp/text/udh.js';
import { Random } from './random.js';
import { trimOldest } from '../../util/trim-oldest.js';

/** What the simulated SMSC does; every field can be changed at runtime with setBehaviour. */
export interface SimulatorBehaviour {
  /** Delay before submit_sm_resp (ms). */
  acceptLatencyMs: number;
  /** Delay between the response and the deliver_sm receipt (ms). */
  receiptDelayMs: number;
  /** Receipt outcome weights by stat word, e.g. { DELIVRD: 0.95, UNDELIV: 0.05 }. */
  outcomes: Record<string, number>;
  /**
   * Outcomes by recipient, checked before the weights: the first rule whose pattern matches the destination decides
   * (`233241234567` exactly, or a prefix ending in `*`, e.g. `23320*`).
   */
  outcomeRules: OutcomeRule[];
  /** Share of receipts sent twice (0..1), as SMSCs do after a lost deliver_sm_resp. */
  duplicateReceiptRatio: number;
  /** Up to this much random extra delay per receipt (ms), so receipts arrive out of submit order. */
  receiptJitterMs: number;
  /** Share of submits answered ESME_RTHROTTLED (0..1). */
  throttleRatio: number;
  /** Swallow submits without answering (for timeout tests). */
  neverRespond: boolean;
  /** Send the receipt before the submit_sm_resp (early receipts). */
  receiptsBeforeResponse: boolean;
  /** Answer every bind with this status (e.g. ESME_RBINDFAIL); 0 accepts normally. */
  refuseBinds: number;
  /** Drop a connection (no response) when it sends its Nth submit; 0 never. */
  disconnectAfterSubmits: number;
  /** Message ids in submit_sm_resp: hexadecimal or decimal. */
  idFormat: 'hex' | 'dec';
  /** Id written in receipts: the same as the response, its decimal form, or upper case with leading zeros. */
  receiptIdStyle: 'same' | 'decimal' | 'padded-upper';
  /**
   * Offer a receipt again when it was not acknowledged (no receiver bound, the bind closed, a refusal), as most SMSCs
   * do; false drops it, like SMSCs that never resend a receipt sent on a bind that went away.
   */
  redeliverReceipts: boolean;
  /** Answer query_sm from the messages' records; false answers ESME_RINVCMDID, like an SMSC without query_sm. */
  answerQueries: boolean;
}

/** A receipt outcome for the recipients a pattern matches. */
export interface OutcomeRule {
  /** An exact number, or a prefix ending in `*`. */
  destination: string;
  /** The receipt's stat word (DELIVRD, UNDELIV, REJECTD, EXPIRED, …). */
  stat: string;
}

/** Whether a rule's pattern matches a destination (a trailing `*` matches any rest, a leading `+` is ignored). */
export function destinationMatches(pattern: string, destination: string): boolean {
  const p = pattern.replace(/^\+/, '');
  const d = destination.replace(/^\+/, '');
  return p.endsWith('*') ? d.startsWith(p.slice(0, -1)) : d === p;
}

export interface SimulatorLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  debug(obj: object, msg?: string): void;
}

export interface SimulatorOptions extends Partial<SimulatorBehaviour> {
  host?: string;
  /** 0 (default) picks a free port. */
  port?: number;
  /** With systemId and password set, only that pair may bind (else ESME_RINVSYSID / ESME_RINVPASWD). */
  systemId?: string;
  password?: string;
  /** Several accepted accounts, system_id → password. */
  accounts?: Record<string, string>;
  /** system_id the simulator answers binds with. */
  serverSystemId?: string;
  /** Received messages kept for inspection (oldest dropped first). */
  maxStored?: number;
  /** Receipts held for a system_id with no receiver bound (oldest dropped first). */
  maxPendingReceipts?: number;
  /** Seed for the outcome/throttle dice, for repeatable runs. */
  seed?: number;
  /** Window for receipts and MO sent to each bound session. */
  windowSize?: number;
  responseTimeoutMs?: number;
  logger?: SimulatorLogger;
}

export interface ReceivedMessage {
  messageId: string;
  systemId: string;
  command: 'submit_sm' | 'data_sm' | 'submit_multi';
  source: string;
  destinations: string[];
  dataCoding: number;
  esmClass: number;
  registeredDelivery: number;
  /** Decoded text of this part (UDH removed). */
  text: string;
  concat?: { reference: number; total: number; seq: number; via: 'udh' | 'sar' };
  tlvs?: Tlvs;
  receivedAt: number;
  /** How many earlier messages had the same source, destination and text. */
  duplicateOf: number;
}

export interface SimulatorStats {
  binds: number;
  bindsRefused: number;
  activeSessions: number;
  submits: number;
  accepted: number;
  throttled: number;
  unanswered: number;
  duplicates: number;
  receiptsSent: number;
  receiptsAcked: number;
  receiptsFailed: number;
  receiptsPending: number;
  receiptsDropped: number;
  /** Receipts sent a second time (duplicateReceiptRatio). */
  receiptsDuplicated: number;
  moSent: number;
  disconnectsInjected: number;
  queries: number;
  cancels: number;
}

export interface InjectMoOptions {
  source: string;
  destination: string;
  text: string;
  /** Deliver to a receiver of this system_id (default: any bound receiver). */
  systemId?: string;
  dataCoding?: number;
  /** How a long text is split (default UDH). */
  concat?: 'udh' | 'sar';
  tlvs?: Tlvs;
}

export interface InjectUssdOptions {
  source: string;
  destination: string;
  text: string;
  systemId?: string;
  /** ussd_service_op (default USSR request). */
  op?: number;
  /** its_session_info octets, when the dialogue needs one. */
  sessionInfo?: Buffer;
}

interface MessageRecord {
  state: number;
  source: string;
  finalDate: string;
}

interface PendingReceipt {
  systemId: string;
  pdu: PduOf<'deliver_sm'>;
}

const DEFAULT_BEHAVIOUR: SimulatorBehaviour = {
  acceptLatencyMs: 0,
  receiptDelayMs: 0,
  outcomes: { DELIVRD: 1 },
  outcomeRules: [],
  duplicateReceiptRatio: 0,
  receiptJitterMs: 0,
  throttleRatio: 0,
  neverRespond: false,
  receiptsBeforeResponse: false,
  refuseBinds: 0,
  disconnectAfterSubmits: 0,
  idFormat: 'hex',
  receiptIdStyle: 'same',
  redeliverReceipts: true,
  answerQueries: true,
};

/** How long an unacknowledged receipt waits before it is offered again. */
const RECEIPT_RETRY_MS = 1000;

const NOOP_LOGGER: SimulatorLogger = { info: () => undefined, warn: () => undefined, debug: () => undefined };

function after(ms: number, fn: () => void): void {
  if (ms <= 0) setImmediate(fn);
  else setTimeout(fn, ms);
}

/**
 * A standalone SMSC: accepts binds, answers submits with message ids, sends receipts with a configurable outcome
 * mix and delay, and injects throttling, disconnects, silence and MO/USSD traffic on demand. All state is bounded.
 */
export class SmscSimulator {
  private behaviour: SimulatorBehaviour;
  private readonly server: SmppServer;
  private readonly random: Random;
  private readonly logger: SimulatorLogger;
  private readonly maxStored: number;
  private readonly maxPendingReceipts: number;
  private readonly stored: ReceivedMessage[] = [];
  private readonly seen = new Map<string, number>(); // source|dest|text → times seen
  private readonly messages = new Map<string, MessageRecord>(); // message id → state, for query/cancel
  private readonly pendingReceipts: PendingReceipt[] = [];
  private readonly submitsPerSession = new WeakMap<Session, number>();
  private nextId: number;
  private receiverCursor = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  readonly stats: SimulatorStats = {
    binds: 0,
    bindsRefused: 0,
    activeSessions: 0,
    submits: 0,
    accepted: 0,
    throttled: 0,
    unanswered: 0,
    duplicates: 0,
    receiptsSent: 0,
    receiptsAcked: 0,
    receiptsFailed: 0,
    receiptsPending: 0,
    receiptsDropped: 0,
    receiptsDuplicated: 0,
    moSent: 0,
    disconnectsInjected: 0,
    queries: 0,
    cancels: 0,
  };

  constructor(private readonly options: SimulatorOptions = {}) {
    this.behaviour = { ...DEFAULT_BEHAVIOUR, ...pickBehaviour(options) };
    this.random = new Random(options.seed ?? Date.now());
    this.logger = options.logger ?? NOOP_LOGGER;
    this.maxStored = options.maxStored ?? 10_000;
    this.maxPendingReceipts = options.maxPendingReceipts ?? 100_000;
    this.nextId = 0x10000000 + Math.floor(this.random.next() * 0x0fffffff);
    this.server = new SmppServer({
      systemId: options.serverSystemId ?? 'FerrySim',
      windowSize: options.windowSize ?? 64,
      maxQueue: 10_000,
      responseTimeoutMs: options.responseTimeoutMs ?? 10_000,
      authenticate: (bind) => this.authenticate(bind),
      onRequest: (pdu, session) => this.onRequest(pdu, session),
      onSession: (session) => this.onSession(session),
    });
  }

  /** Starts listening; resolves with the port. */
  async start(): Promise<number> {
    const address = await this.server.listen(this.options.port ?? 0, this.options.host ?? '127.0.0.1');
    this.logger.info({ host: address.address, port: address.port, behaviour: this.behaviour }, 'SMSC simulator listening');
    return address.port;
  }

  get port(): number {
    return this.server.port;
  }

  get host(): string {
    return this.options.host ?? '127.0.0.1';
  }

  /** Changes behaviour at runtime (e.g. start throttling, go silent). */
  setBehaviour(patch: Partial<SimulatorBehaviour>): void {
    this.behaviour = { ...this.behaviour, ...patch };
    this.logger.info({ behaviour: this.behaviour }, 'simulator behaviour changed');
  }

  getBehaviour(): Readonly<SimulatorBehaviour> {
    return this.behaviour;
  }

  /** Messages received so far (newest last, at most maxStored). */
  received(): ReceivedMessage[] {
    return this.stored.slice(-this.maxStored);
  }

  clearReceived(): void {
    this.stored.length = 0;
    this.seen.clear();
  }

  /** Bound sessions, e.g. to count binds per system_id. */
  sessions(): Session[] {
    return [...this.server.sessions];
  }

  /** Drops every connection now (or those of one system_id), without unbind. */
  disconnectAll(systemId?: string): number {
    let n = 0;
    for (const s of this.server.sessions) {
      if (systemId !== undefined && s.systemId !== systemId) continue;
      s.socket.destroy();
      n++;
    }
    this.stats.disconnectsInjected += n;
    if (n) this.logger.warn({ sessions: n, systemId }, 'simulator dropped connections on demand');
    return n;
  }

  /** Sends a mobile-originated message (split with UDH or SAR when long); resolves with each part's response. */
  async injectMo(mo: InjectMoOptions): Promise<Pdu[]> {
    const session = this.receiverFor(mo.systemId);
    if (!session) throw new Error(`no receiver bound${mo.systemId ? ` for ${mo.systemId}` : ''}`);
    const split = splitMessage(mo.text, { dataCoding: mo.dataCoding, concat: mo.concat });
    const responses: Pdu[] = [];
    for (let i = 0; i < split.segments.length; i++) {
      const tlvs: Tlvs = { ...(mo.tlvs ?? {}), ...(split.sar ? split.sar[i] : {}) };
      const resp = await session.request({
        command: 'deliver_sm',
        source_addr_ton: 1,
        source_addr_npi: 1,
        source_addr: mo.source,
        destination_addr: mo.destination,
        esm_class: split.esmClass,
        data_coding: split.dataCoding,
        short_message: split.segments[i],
        tlvs: Object.keys(tlvs).length ? tlvs : undefined,
      });
      this.stats.moSent++;
      responses.push(resp);
    }
    return responses;
  }

  /** Sends a USSD deliver_sm (service_type USSD, ussd_service_op TLV); resolves with the response. */
  async injectUssd(u: InjectUssdOptions): Promise<Pdu> {
    const session = this.receiverFor(u.systemId);
    if (!session) throw new Error('no receiver bound');
    const { dataCoding, bytes } = encodeText(u.text);
    const tlvs: Tlvs = { ussd_service_op: u.op ?? UssdServiceOp.USSR_REQUEST };
    if (u.sessionInfo) tlvs.its_session_info = u.sessionInfo;
    const resp = await session.request({
      command: 'deliver_sm',
      service_type: 'USSD',
      source_addr: u.source,
      destination_addr: u.destination,
      data_coding: dataCoding,
      short_message: bytes,
      tlvs,
    });
    this.stats.moSent++;
    return resp;
  }

  /** Stops listening and drops every session. */
  async close(): Promise<void> {
    clearTimeout(this.retryTimer);
    await this.server.close();
    this.logger.info({ stats: this.stats }, 'SMSC simulator stopped');
  }

  // ------------------------------------------------------------ binds

  private authenticate(bind: BindPdu): BindDecision {
    const refuse = this.behaviour.refuseBinds;
    let status: number = refuse || CommandStatus.ESME_ROK;
    if (!refuse) {
      const accounts = this.options.accounts ?? (this.options.systemId !== undefined ? { [this.options.systemId]: this.options.password ?? '' } : undefined);
      if (accounts) {
        if (!(bind.system_id in accounts)) status = CommandStatus.ESME_RINVSYSID;
        else if (accounts[bind.system_id] !== bind.password) status = CommandStatus.ESME_RINVPASWD;
      }
    }
    if (status === CommandStatus.ESME_ROK) this.stats.binds++;
    else this.stats.bindsRefused++;
    this.logger.info({ systemId: bind.system_id, command: bind.command, status }, status ? 'bind refused' : 'bind accepted');
    return { status };
  }

  private onSession(session: Session): void {
    this.stats.activeSessions++;
    session.on('bound', (bindType) => {
      if (bindType !== 'transmitter') this.flushPendingReceipts();
    });
    session.once('close', (reason) => {
      this.stats.activeSessions--;
      this.logger.debug({ systemId: session.systemId, reason }, 'session closed');
    });
  }

  // ------------------------------------------------------------ requests

  private onRequest(pdu: Pdu, session: Session): ResponseFields | typeof NO_RESPONSE | Promise<ResponseFields | typeof NO_RESPONSE> {
    switch (pdu.command) {
      case 'submit_sm':
      case 'data_sm':
      case 'submit_multi':
        return this.onSubmit(pdu, session);
      case 'query_sm': {
        this.stats.queries++;
        if (!this.behaviour.answerQueries) return { command_status: CommandStatus.ESME_RINVCMDID };
        const m = this.messages.get(pdu.message_id);
        if (!m) return { command_status: CommandStatus.ESME_RQUERYFAIL };
        return { message_id: pdu.message_id, final_date: m.finalDate, message_state: m.state, error_code: 0 };
      }
      case 'cancel_sm': {
        this.stats.cancels++;
        const m = this.messages.get(pdu.message_id);
        if (!m || m.state !== MessageState.ENROUTE) return { command_status: CommandStatus.ESME_RCANCELFAIL };
        m.state = MessageState.DELETED;
        return {};
      }
      case 'replace_sm':
        return this.messages.has(pdu.message_id) ? {} : { command_status: CommandStatus.ESME_RREPLACEFAIL };
      default:
        return { command_status: CommandStatus.ESME_RINVCMDID };
    }
  }

  private onSubmit(
    pdu: PduOf<'submit_sm'> | PduOf<'data_sm'> | PduOf<'submit_multi'>,
    session: Session,
  ): ResponseFields | typeof NO_RESPONSE | Promise<ResponseFields | typeof NO_RESPONSE> {
    this.stats.submits++;
    const b = this.behaviour;
    const count = (this.submitsPerSession.get(session) ?? 0) + 1;
    this.submitsPerSession.set(session, count);
    if (b.disconnectAfterSubmits > 0 && count >= b.disconnectAfterSubmits) {
      this.stats.disconnectsInjected++;
      this.logger.warn({ systemId: session.systemId, submits: count }, 'simulator dropping connection (injected)');
      session.socket.destroy();
      return NO_RESPONSE;
    }
    if (b.neverRespond) {
      this.stats.unanswered++;
      return NO_RESPONSE;
    }
    if (b.throttleRatio > 0 && this.random.next() < b.throttleRatio) {
      this.stats.throttled++;
      return { command_status: CommandStatus.ESME_RTHROTTLED };
    }

    const messageId = this.issueId();
    const stored = this.store(pdu, session, messageId);
    this.stats.accepted++;
    const stat = this.pickOutcome(stored.destinations[0] ?? '');
    const wantsReceipt = this.wantsReceipt(pdu.registered_delivery, stat);
    this.messages.set(messageId, { state: MessageState.ENROUTE, source: stored.source, finalDate: '' });
    this.trimMessages();

    const response: ResponseFields = pdu.command === 'submit_multi' ? { message_id: messageId, unsuccess_sme: [] } : { message_id: messageId };
    if (b.receiptsBeforeResponse) {
      if (wantsReceipt) this.sendReceipt(session.systemId ?? '', stored, stat);
      // Give the receipt a head start even when it travels on another bind.
      return new Promise((resolve) => setTimeout(() => resolve(response), Math.max(b.acceptLatencyMs, 20)));
    }
    if (wantsReceipt) {
      const systemId = session.systemId ?? '';
      const jitter = b.receiptJitterMs > 0 ? Math.floor(this.random.next() * b.receiptJitterMs) : 0;
      after(b.acceptLatencyMs + b.receiptDelayMs + jitter, () => this.sendReceipt(systemId, stored, stat));
    }
    if (b.acceptLatencyMs > 0) return new Promise((resolve) => setTimeout(() => resolve(response), b.acceptLatencyMs));
    return response;
  }

  private wantsReceipt(registeredDelivery: number, stat: string): boolean {
    const mode = registeredDelivery & RegisteredDelivery.RECEIPT_MASK;
    return mode === RegisteredDelivery.FINAL || (mode === RegisteredDelivery.FAILURE_ONLY && stat !== 'DELIVRD');
  }

  private issueId(): string {
    const n = this.nextId++;
    if (this.nextId > 0xfffffffff) this.nextId = 0x10000000;
    return this.behaviour.idFormat === 'dec' ? String(n) : n.toString(16);
  }

  private receiptId(id: string): string {
    switch (this.behaviour.receiptIdStyle) {
      case 'same':
        return id;
      case 'decimal':
        return this.behaviour.idFormat === 'hex' ? BigInt('0x' + id).toString(10) : id;
      case 'padded-upper':
        return id.toUpperCase().padStart(16, '0');
    }
  }

  private pickOutcome(destination: string): string {
    for (const rule of this.behaviour.outcomeRules) if (destinationMatches(rule.destination, destination)) return rule.stat;
    const entries = Object.entries(this.behaviour.outcomes).filter(([, w]) => w > 0);
    const total = entries.reduce((s, [, w]) => s + w, 0);
    if (total <= 0) return 'DELIVRD';
    let roll = this.random.next() * total;
    for (const [stat, w] of entries) {
      roll -= w;
      if (roll < 0) return stat;
    }
    return entries[entries.length - 1][0];
  }

  private store(pdu: PduOf<'submit_sm'> | PduOf<'data_sm'> | PduOf<'submit_multi'>, session: Session, messageId: string): ReceivedMessage {
    const parts = messageParts(pdu);
    const destinations =
      pdu.command === 'submit_multi'
        ? pdu.dest_address.map((d) => (d.dest_flag === 1 ? d.destination_addr : d.dl_name))
        : [pdu.destination_addr];
    const text = decodeText(parts.payload, pdu.data_coding);
    const key = `${pdu.source_addr}\u0000${destinations.join(',')}\u0000${text}`;
    const seenBefore = this.seen.get(key) ?? 0;
    if (seenBefore > 0) this.stats.duplicates++;
    this.seen.delete(key); // re-insert so the Map's order stays least-recently-seen first
    this.seen.set(key, seenBefore + 1);
    trimOldest(this.seen, this.maxStored);
    const message: ReceivedMessage = {
      messageId,
      systemId: session.systemId ?? '',
      command: pdu.command,
      source: pdu.source_addr,
      destinations,
      dataCoding: pdu.data_coding,
      esmClass: pdu.esm_class,
      registeredDelivery: pdu.registered_delivery,
      text,
      concat: parts.concat,
      tlvs: pdu.tlvs,
      receivedAt: Date.now(),
      duplicateOf: seenBefore,
    };
    this.stored.push(message);
    // Trimmed in steps of a quarter: dropping one from the front of a full array on every message moved all of it.
    if (this.stored.length >= this.maxStored + Math.ceil(this.maxStored / 4)) this.stored.splice(0, this.stored.length - this.maxStored);
    return message;
  }

  private trimMessages(): void {
    trimOldest(this.messages, this.maxStored);
  }

  // ------------------------------------------------------------ receipts

  private sendReceipt(systemId: string, m: ReceivedMessage, stat: string): void {
    const state = messageStateFromStat(stat) ?? MessageState.UNKNOWN;
    const now = new Date();
    const record = this.messages.get(m.messageId);
    if (record && record.state === MessageState.DELETED) return; // cancelled before delivery
    if (record) {
      record.state = state;
      record.finalDate = state === MessageState.ENROUTE || state === MessageState.ACCEPTED ? '' : formatSmppAbsolute(now);
    }
    const id = this.receiptId(m.messageId);
    const text = formatReceipt({
      id,
      stat,
      submitDate: new Date(m.receivedAt),
      doneDate: now,
      err: stat === 'DELIVRD' ? 0 : 1,
      text: m.text,
    });
    const pdu: PduOf<'deliver_sm'> = {
      command: 'deliver_sm',
      command_status: 0,
      sequence_number: 0,
      service_type: '',
      source_addr_ton: 1,
      source_addr_npi: 1,
      source_addr: m.destinations[0] ?? '',
      dest_addr_ton: 1,
      dest_addr_npi: 1,
      destination_addr: m.source,
      esm_class: EsmClass.MC_DELIVERY_RECEIPT,
      protocol_id: 0,
      priority_flag: 0,
      schedule_delivery_time: '',
      validity_period: '',
      registered_delivery: 0,
      replace_if_present_flag: 0,
      data_coding: DataCoding.SMSC_DEFAULT,
      sm_default_msg_id: 0,
      // Receipt text as GSM-7 like most SMSCs; characters outside it (in the quoted text) become '?'.
      short_message: encodeWith(text, DataCoding.SMSC_DEFAULT),
      tlvs: { receipted_message_id: id, message_state: state },
    };
    this.deliverReceipt({ systemId, pdu });
    if (this.behaviour.duplicateReceiptRatio > 0 && this.random.next() < this.behaviour.duplicateReceiptRatio) {
      this.stats.receiptsDuplicated++;
      this.deliverReceipt({ systemId, pdu: { ...pdu } });
    }
  }

  private deliverReceipt(r: PendingReceipt): void {
    const session = this.receiverFor(r.systemId);
    if (!session && !this.behaviour.redeliverReceipts) {
      this.stats.receiptsDropped++;
      return;
    }
    if (!session) {
      this.pendingReceipts.push(r);
      if (this.pendingReceipts.length > this.maxPendingReceipts) {
        this.pendingReceipts.shift();
        this.stats.receiptsDropped++;
      }
      this.stats.receiptsPending = this.pendingReceipts.length;
      return;
    }
    this.stats.receiptsSent++;
    session.request(r.pdu).then(
      (resp) => {
        if (resp.command_status === CommandStatus.ESME_ROK) {
          this.stats.receiptsAcked++;
          return;
        }
        // Refused (e.g. ESME_RX_T_APPN while the ESME's storage is down): offered again later, as SMSCs do.
        this.stats.receiptsFailed++;
        if (this.dropUnacknowledged()) return;
        this.pendingReceipts.push(r);
        this.stats.receiptsPending = this.pendingReceipts.length;
        this.retryPendingSoon();
      },
      () => {
        // Not acknowledged (timeout, queue full, closed): kept and tried again shortly, as an SMSC would retry.
        this.stats.receiptsFailed++;
        if (this.dropUnacknowledged()) return;
        this.pendingReceipts.push(r);
        this.stats.receiptsPending = this.pendingReceipts.length;
        this.retryPendingSoon();
      },
    );
  }

  /** With redeliverReceipts off, an unacknowledged receipt is gone (counted as dropped). */
  private dropUnacknowledged(): boolean {
    if (this.behaviour.redeliverReceipts) return false;
    this.stats.receiptsDropped++;
    return true;
  }

  private retryPendingSoon(): void {
    if (this.retryTimer) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.flushPendingReceipts();
    }, RECEIPT_RETRY_MS);
    this.retryTimer.unref();
  }

  private flushPendingReceipts(): void {
    const waiting = this.pendingReceipts.splice(0, this.pendingReceipts.length);
    this.stats.receiptsPending = 0;
    for (const r of waiting) this.deliverReceipt(r);
  }

  /** A bound receiver or transceiver, round-robin, of `systemId` (any when undefined). */
  private receiverFor(systemId: string | undefined): Session | undefined {
    const candidates = [...this.server.sessions].filter(
      (s) => s.state === 'bound' && s.bindType !== 'transmitter' && (systemId === undefined || s.systemId === systemId),
    );
    if (candidates.length === 0) return undefined;
    return candidates[this.receiverCursor++ % candidates.length];
  }
}

function pickBehaviour(o: SimulatorOptions): Partial<SimulatorBehaviour> {
  const out: Partial<SimulatorBehaviour> = {};
  for (const key of Object.keys(DEFAULT_BEHAVIOUR) as Array<keyof SimulatorBehaviour>) {
    if (o[key] !== undefined) (out as Record<string, unknown>)[key] = o[key];
  }
  return out;
}

/** Starts a simulator and resolves once it listens. */
export async function startSimulator(options: SimulatorOptions = {}): Promise<SmscSimulator> {
  const sim = new SmscSimulator(options);
  await sim.start();
  return sim;
}
