import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import { DEFAULT_MAX_PDU_LENGTH, decodePdu } from './codec.js';
import { CommandStatus, INTERFACE_VERSION_34, isResponseId, statusName, type CommandName } from './constants.js';
import {
  SessionClosedError,
  SmppBindError,
  SmppDecodeError,
  SmppQueueFullError,
  SmppStateError,
  SmppTimeoutError,
  type CloseReason,
} from './errors.js';
import { FrameReader } from './frame-reader.js';
import type { BindPdu, Pdu, PduInput, PduOf } from './pdu.js';
import { PduWriter } from './pdu-writer.js';
import { RequestWindow, type Outstanding, type Waiting } from './request-window.js';
import { RESPONSE_OF, type RequestCommand, type UnsuccessSme } from './schema.js';
import type { Tlvs } from './tlv.js';

export type SessionRole = 'client' | 'server';
export type BindType = 'transmitter' | 'receiver' | 'transceiver';
export type SessionState = 'open' | 'binding' | 'bound' | 'unbinding' | 'closed';

/** What a request handler answers; the session adds command id and sequence number. */
export interface ResponseFields {
  command_status?: number;
  message_id?: string;
  system_id?: string;
  final_date?: string;
  message_state?: number;
  error_code?: number;
  unsuccess_sme?: UnsuccessSme[];
  tlvs?: Tlvs;
}

/** Returned by a request handler that wants no response sent at all (e.g. a simulator playing dead). */
export const NO_RESPONSE: unique symbol = Symbol('smpp.no-response');

type HandlerResult = ResponseFields | void | typeof NO_RESPONSE;

/**
 * Handles one incoming request (submit_sm on a server, deliver_sm on a client, ...). May answer synchronously
 * or with a promise; a throw or rejection is answered with ESME_RSYSERR. Not called for enquire_link, unbind or
 * binds, which the session answers itself.
 */
export type RequestHandler = (pdu: Pdu, session: Session) => HandlerResult | Promise<HandlerResult>;

export interface BindDecision {
  /** ESME_ROK to accept, or e.g. ESME_RINVPASWD, ESME_RINVSYSID, ESME_RBINDFAIL. */
  status: number;
  /** system_id to put in the bind response (the server's own). */
  system_id?: string;
}

/** Server role: decides a bind. Without one every bind is accepted. */
export type BindAuthenticator = (bind: BindPdu, session: Session) => BindDecision | Promise<BindDecision>;

export interface SessionOptions {
  /** Outstanding requests at most (default 64). */
  windowSize?: number;
  /** Requests that may wait for a window slot before request() rejects with SmppQueueFullError (default 4 × window). */
  maxQueue?: number;
  /** Per-request timeout, counted from the request() call (default 10 s). */
  responseTimeoutMs?: number;
  /** Send enquire_link after this long without receiving anything; 0 disables (default 30 s for clients, 0 for servers). */
  enquireLinkIntervalMs?: number;
  /** Close after this long without receiving anything, or without a bind on a server; 0 disables (default 0). */
  idleTimeoutMs?: number;
  /** Longest PDU accepted; a longer command_length closes the session. */
  maxPduLength?: number;
  /** Incoming requests being handled at once; beyond it the session answers ESME_RTHROTTLED (default 1000). */
  maxIncoming?: number;
  /** Handler for incoming requests. */
  onRequest?: RequestHandler;
  /** Server role: bind authentication. */
  authenticate?: BindAuthenticator;
  /** Server role: system_id answered in bind responses (default 'Ferry'). */
  systemId?: string;
}

export interface SessionStats {
  requestsSent: number;
  responsesReceived: number;
  /** Responses received by command_status name, e.g. { ESME_ROK: 10, ESME_RTHROTTLED: 2 }. */
  responsesByStatus: Record<string, number>;
  requestsReceived: number;
  responsesSent: number;
  timeouts: number;
  lateResponses: number;
  queueRejections: number;
  throttledIncoming: number;
  decodeErrors: number;
  enquireLinksSent: number;
  enquireLinksReceived: number;
  bytesIn: number;
  pdusIn: number;
}

export interface SessionEvents {
  bound: [bindType: BindType];
  /** Emitted once; `cause` is the socket or decode error where there was one. */
  close: [reason: CloseReason, cause: unknown];
  /** The peer asked to unbind (the session answers and closes). */
  unbind: [];
}

const BIND_COMMAND: Record<BindType, 'bind_transmitter' | 'bind_receiver' | 'bind_transceiver'> = {
  transmitter: 'bind_transmitter',
  receiver: 'bind_receiver',
  transceiver: 'bind_transceiver',
};
const BIND_TYPE_OF: Partial<Record<CommandName, BindType>> = {
  bind_transmitter: 'transmitter',
  bind_receiver: 'receiver',
  bind_transceiver: 'transceiver',
};

// Which incoming requests each side accepts once bound, by bind type.
const SERVER_TX_COMMANDS = new Set<CommandName>(['submit_sm', 'submit_multi', 'data_sm', 'query_sm', 'cancel_sm', 'replace_sm']);
const CLIENT_RX_COMMANDS = new Set<CommandName>(['deliver_sm', 'data_sm', 'alert_notification']);

const CLOSE_GRACE_MS = 2000;

/**
 * One SMPP connection, either role. Owns sequence numbers, the request window with timeouts, write batching
 * with back-pressure, enquire_link, unbind and (server role) bind handling. A decode error closes this session
 * only; close() fails every pending request with SessionClosedError.
 */
export class Session extends EventEmitter<SessionEvents> {
  readonly role: SessionRole;
  state: SessionState = 'open';
  bindType: BindType | undefined;
  /** The peer's system_id once bound (server role), or the one we bound with (client role). */
  systemId: string | undefined;
  closeReason: CloseReason | undefined;
  readonly stats: SessionStats = {
    requestsSent: 0,
    responsesReceived: 0,
    responsesByStatus: {},
    requestsReceived: 0,
    responsesSent: 0,
    timeouts: 0,
    lateResponses: 0,
    queueRejections: 0,
    throttledIncoming: 0,
    decodeErrors: 0,
    enquireLinksSent: 0,
    enquireLinksReceived: 0,
    bytesIn: 0,
    pdusIn: 0,
  };

  private readonly window: RequestWindow;
  private readonly writer: PduWriter;
  private readonly reader: FrameReader;
  private readonly responseTimeoutMs: number;
  private readonly enquireLinkIntervalMs: number;
  private readonly idleTimeoutMs: number;
  private readonly maxPduLength: number;
  private readonly maxIncoming: number;
  private readonly authenticate: BindAuthenticator | undefined;
  private readonly ownSystemId: string;
  private handler: RequestHandler | undefined;
  private incoming = 0;
  private lastReceivedAt = Date.now();
  private readonly openedAt = Date.now();
  private enquireOutstanding = false;
  private pausedForWrite = false;
  private readonly ticker: NodeJS.Timeout;
  private closeWaiters: Array<() => void> = [];
  private pendingBind: { bindType: BindType; systemId: string } | undefined;

  constructor(readonly socket: Socket, role: SessionRole, options: SessionOptions = {}) {
    super();
    this.role = role;
    const windowSize = Math.max(1, options.windowSize ?? 64);
    this.window = new RequestWindow(windowSize, Math.max(0, options.maxQueue ?? windowSize * 4));
    this.responseTimeoutMs = options.responseTimeoutMs ?? 10_000;
    this.enquireLinkIntervalMs = options.enquireLinkIntervalMs ?? (role === 'client' ? 30_000 : 0);
    this.idleTimeoutMs = options.idleTimeoutMs ?? 0;
    this.maxPduLength = options.maxPduLength ?? DEFAULT_MAX_PDU_LENGTH;
    this.maxIncoming = options.maxIncoming ?? 1000;
    this.authenticate = options.authenticate;
    this.ownSystemId = options.systemId ?? 'Ferry';
    this.handler = options.onRequest;

    socket.setNoDelay(true);
    this.writer = new PduWriter(socket, () => {
      if (this.window.queued > 0) this.pump();
    });
    this.reader = new FrameReader(this.onFrame, this.maxPduLength);
    socket.on('data', this.onData);
    socket.on('drain', this.onDrain);
    socket.on('end', () => this.close('peer_closed'));
    socket.on('close', () => this.close('peer_closed'));
    socket.on('error', (err) => this.close('socket_error', err));

    // One coarse ticker per session sweeps timeouts and drives keep-alive, instead of a timer per request.
    const shortest = Math.min(this.responseTimeoutMs, this.enquireLinkIntervalMs || Infinity, this.idleTimeoutMs || Infinity);
    const tickMs = Math.max(5, Math.min(250, Math.floor(shortest / 4)));
    this.ticker = setInterval(() => this.tick(), tickMs);
    this.ticker.unref();
  }

  /** Sets (or replaces) the handler for incoming requests. */
  onRequest(handler: RequestHandler): this {
    this.handler = handler;
    return this;
  }

  get windowSize(): number {
    return this.window.size;
  }
  /** Requests sent and not yet answered (counted against the window). */
  get windowInUse(): number {
    return this.window.inUse;
  }
  /** Requests waiting for a window slot. */
  get queued(): number {
    return this.window.queued;
  }
  /** True when a request() now would be sent without waiting. */
  get hasCapacity(): boolean {
    return this.state === 'bound' && this.window.hasRoom && this.window.queued === 0 && !this.writer.congested;
  }
  get bytesOut(): number {
    return this.writer.bytesOut;
  }
  get pdusOut(): number {
    return this.writer.pdusOut;
  }
  /** Octets written but not yet taken by the kernel. */
  get pendingWriteBytes(): number {
    return this.writer.pendingBytes;
  }
  get closed(): boolean {
    return this.state === 'closed';
  }

  /**
   * Sends a request and resolves with its response PDU whatever its command_status (generic_nack included).
   * Waits for a window slot in a bounded queue; rejects with SmppQueueFullError when that is full,
   * SmppTimeoutError after the timeout, SessionClosedError when the session closes first.
   */
  request(pdu: PduInput, options: { timeoutMs?: number } = {}): Promise<Pdu> {
    return new Promise<Pdu>((resolve, reject) => {
      if (this.state === 'closed') return reject(new SessionClosedError(this.closeReason ?? 'local'));
      if (this.state === 'unbinding') return reject(new SmppStateError('session is unbinding'));
      const timeoutMs = options.timeoutMs ?? this.responseTimeoutMs;
      const deadline = Date.now() + timeoutMs;
      if (this.window.hasRoom && this.window.queued === 0 && !this.writer.congested) {
        this.send(pdu, resolve, reject, deadline, timeoutMs, true);
      } else if (!this.window.enqueue({ pdu, resolve, reject, deadline, timeoutMs })) {
        this.stats.queueRejections++;
        reject(new SmppQueueFullError(this.window.queued));
      }
    });
  }

  /** Sends a PDU that expects no response (alert_notification, outbind) or a hand-built response. */
  sendRaw(pdu: PduInput): void {
    if (this.state === 'closed') throw new SessionClosedError(this.closeReason ?? 'local');
    this.writer.write(pdu);
  }

  /** Client role: binds with the given type and credentials. Rejects with SmppBindError on a refusal. */
  async bind(
    bindType: BindType,
    fields: { system_id: string; password: string; system_type?: string; interface_version?: number; addr_ton?: number; addr_npi?: number; address_range?: string },
    timeoutMs = this.responseTimeoutMs,
  ): Promise<PduOf<'bind_transmitter_resp'> | PduOf<'bind_receiver_resp'> | PduOf<'bind_transceiver_resp'>> {
    if (this.state !== 'open') throw new SmppStateError(`cannot bind in state ${this.state}`);
    this.state = 'binding';
    this.pendingBind = { bindType, systemId: fields.system_id };
    let resp: Pdu;
    try {
      resp = await this.control({ command: BIND_COMMAND[bindType], ...fields, interface_version: fields.interface_version ?? INTERFACE_VERSION_34 }, timeoutMs);
    } catch (err) {
      if (this.state === 'binding') this.state = 'open';
      throw err;
    } finally {
      this.pendingBind = undefined;
    }
    // The state already changed when the response was read (see onResponse); here only the outcome is reported.
    if (this.closed) throw new SessionClosedError(this.closeReason ?? 'local');
    if (resp.command_status !== CommandStatus.ESME_ROK || resp.command === 'generic_nack') {
      throw new SmppBindError(resp.command_status || CommandStatus.ESME_RBINDFAIL);
    }
    return resp as PduOf<'bind_transceiver_resp'>;
  }

  /**
   * Unbinds politely: unsent requests fail, unbind is sent, and the session closes when unbind_resp arrives
   * (or after the timeout). Requests still in flight then fail with SessionClosedError('unbind').
   */
  async unbind(timeoutMs = this.responseTimeoutMs): Promise<void> {
    if (this.state === 'closed') return;
    if (this.state === 'unbinding') return this.waitClosed();
    this.state = 'unbinding';
    this.window.failWaiting(new SessionClosedError('unbind'));
    try {
      await this.control({ command: 'unbind' }, timeoutMs);
    } catch {
      // A peer that does not answer unbind is closed on anyway.
    }
    this.close('unbind');
  }

  /** Resolves once the session has closed. */
  waitClosed(): Promise<void> {
    if (this.state === 'closed') return Promise.resolve();
    return new Promise((resolve) => this.closeWaiters.push(resolve));
  }

  /**
   * Closes the session now: pending requests fail with SessionClosedError(reason), already-encoded PDUs are
   * flushed, the socket is ended (and destroyed if the peer does not finish closing).
   */
  close(reason: CloseReason = 'local', cause?: unknown): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.closeReason = reason;
    clearInterval(this.ticker);
    this.window.failAll(new SessionClosedError(reason, cause));
    this.writer.close();
    this.socket.off('data', this.onData);
    if (reason === 'socket_error' || reason === 'peer_closed') {
      this.socket.destroy();
    } else {
      this.socket.end();
      const t = setTimeout(() => this.socket.destroy(), CLOSE_GRACE_MS);
      t.unref();
      this.socket.once('close', () => clearTimeout(t));
    }
    this.emit('close', reason, cause);
    for (const w of this.closeWaiters) w();
    this.closeWaiters = [];
  }

  // ------------------------------------------------------------ sending

  /** A request outside the window (bind, unbind, enquire_link): keep-alive must work while the window is full. */
  private control(pdu: PduInput, timeoutMs: number): Promise<Pdu> {
    return new Promise<Pdu>((resolve, reject) => {
      if (this.state === 'closed') return reject(new SessionClosedError(this.closeReason ?? 'local'));
      this.send(pdu, resolve, reject, Date.now() + timeoutMs, timeoutMs, false);
    });
  }

  private send(pdu: PduInput, resolve: (p: Pdu) => void, reject: (e: Error) => void, deadline: number, timeoutMs: number, counted: boolean): void {
    const seq = this.window.nextSequence();
    try {
      this.writer.write(pdu, seq);
    } catch (err) {
      reject(err as Error);
      return;
    }
    const entry: Outstanding = { command: pdu.command, resolve, reject, deadline, timeoutMs, counted };
    this.window.add(seq, entry);
    this.stats.requestsSent++;
  }

  /** Moves waiting requests into free window slots while the socket keeps up. */
  private pump(): void {
    while (this.state !== 'closed' && this.window.hasRoom && !this.writer.congested) {
      const w: Waiting | undefined = this.window.dequeue();
      if (!w) return;
      this.send(w.pdu, w.resolve, w.reject, w.deadline, w.timeoutMs, true);
    }
  }

  private respond(request: Pdu, fields: HandlerResult): void {
    if (this.state === 'closed' || fields === NO_RESPONSE) return;
    const respCommand = RESPONSE_OF[request.command as RequestCommand];
    if (!respCommand) return; // alert_notification and outbind are not answered
    const pdu = { ...(fields ?? {}), command: respCommand, sequence_number: request.sequence_number } as PduInput;
    try {
      this.writer.write(pdu);
    } catch {
      // A handler answered with fields SMPP cannot carry: tell the peer rather than leave it waiting.
      this.writer.write({ command: respCommand, command_status: CommandStatus.ESME_RSYSERR, sequence_number: request.sequence_number } as PduInput);
    }
    this.stats.responsesSent++;
  }

  private respondStatus(request: Pdu, status: number): void {
    this.respond(request, { command_status: status });
  }

  private nack(sequenceNumber: number, status: number): void {
    this.writer.write({ command: 'generic_nack', command_status: status, sequence_number: sequenceNumber });
  }

  // ------------------------------------------------------------ receiving

  private readonly onData = (chunk: Buffer): void => {
    this.stats.bytesIn += chunk.length;
    this.lastReceivedAt = Date.now();
    try {
      this.reader.push(chunk);
    } catch (err) {
      // Only framing errors reach here: the stream can no longer be cut into PDUs.
      this.stats.decodeErrors++;
      this.nack(0, CommandStatus.ESME_RINVCMDLEN);
      this.close('decode_error', err);
      return;
    }
    // The peer is not reading our responses: stop reading its requests until our writes drain.
    if (this.state !== 'closed' && this.writer.congested && !this.pausedForWrite) {
      this.pausedForWrite = true;
      this.socket.pause();
    }
  };

  private readonly onDrain = (): void => {
    if (this.pausedForWrite) {
      this.pausedForWrite = false;
      if (this.state !== 'closed') this.socket.resume();
    }
    this.pump();
  };

  private readonly onFrame = (buf: Buffer, offset: number): boolean => {
    if (this.state === 'closed') return false;
    this.stats.pdusIn++;
    let pdu: Pdu;
    try {
      pdu = decodePdu(buf, offset, this.maxPduLength);
    } catch (err) {
      this.stats.decodeErrors++;
      if (err instanceof SmppDecodeError && err.code === 'UNKNOWN_COMMAND_ID') {
        this.nack(err.sequenceNumber ?? 0, CommandStatus.ESME_RINVCMDID);
        return true;
      }
      const status = err instanceof SmppDecodeError && err.code === 'TRUNCATED' ? CommandStatus.ESME_RINVCMDLEN : CommandStatus.ESME_RINVMSGLEN;
      this.nack(err instanceof SmppDecodeError ? (err.sequenceNumber ?? 0) : 0, status);
      this.close('decode_error', err);
      return false;
    }
    if (isResponseId(buf.readUInt32BE(offset + 4))) this.onResponse(pdu);
    else this.onIncomingRequest(pdu);
    return !this.closed;
  };

  private onResponse(pdu: Pdu): void {
    const entry = this.window.take(pdu.sequence_number);
    if (!entry) {
      this.stats.lateResponses++;
      return;
    }
    if (this.pendingBind && this.state === 'binding' && entry.command.startsWith('bind_')) this.completeBind(pdu);
    this.stats.responsesReceived++;
    const label = statusName(pdu.command_status);
    this.stats.responsesByStatus[label] = (this.stats.responsesByStatus[label] ?? 0) + 1;
    entry.resolve(pdu);
    if (entry.counted && this.window.queued > 0) this.pump();
  }

  private onIncomingRequest(pdu: Pdu): void {
    this.stats.requestsReceived++;
    switch (pdu.command) {
      case 'enquire_link':
        this.stats.enquireLinksReceived++;
        this.respond(pdu, undefined);
        return;
      case 'unbind':
        this.respond(pdu, undefined);
        this.emit('unbind');
        this.close('peer_unbind');
        return;
      case 'bind_transmitter':
      case 'bind_receiver':
      case 'bind_transceiver':
        this.onBind(pdu);
        return;
      case 'outbind':
        return; // Ferry does not act on outbind
    }
    if (this.state !== 'bound' || !this.allowedWhenBound(pdu.command)) {
      this.respondStatus(pdu, CommandStatus.ESME_RINVBNDSTS);
      return;
    }
    if (!this.handler) {
      this.respondStatus(pdu, CommandStatus.ESME_RSYSERR);
      return;
    }
    if (this.incoming >= this.maxIncoming) {
      this.stats.throttledIncoming++;
      this.respondStatus(pdu, CommandStatus.ESME_RTHROTTLED);
      return;
    }
    let result: HandlerResult | Promise<HandlerResult>;
    try {
      result = this.handler(pdu, this);
    } catch {
      this.respondStatus(pdu, CommandStatus.ESME_RSYSERR);
      return;
    }
    if (result && typeof (result as Promise<unknown>).then === 'function') {
      this.incoming++;
      (result as Promise<HandlerResult>).then(
        (fields) => {
          this.incoming--;
          this.respond(pdu, fields);
        },
        () => {
          this.incoming--;
          this.respondStatus(pdu, CommandStatus.ESME_RSYSERR);
        },
      );
    } else {
      this.respond(pdu, result as HandlerResult);
    }
  }

  /**
   * Client role: applies a bind response as soon as it is read, so a deliver_sm right behind it in the same chunk
   * already finds the session bound (the awaiting bind() call resumes only later).
   */
  private completeBind(resp: Pdu): void {
    const pending = this.pendingBind!;
    if (resp.command_status !== CommandStatus.ESME_ROK || resp.command === 'generic_nack') {
      this.state = 'open';
      return;
    }
    this.state = 'bound';
    this.bindType = pending.bindType;
    this.systemId = pending.systemId;
    this.emit('bound', pending.bindType);
  }

  private allowedWhenBound(command: CommandName): boolean {
    if (this.role === 'server') return this.bindType !== 'receiver' && SERVER_TX_COMMANDS.has(command);
    return this.bindType !== 'transmitter' && CLIENT_RX_COMMANDS.has(command);
  }

  private onBind(pdu: BindPdu): void {
    if (this.role === 'client') {
      this.respondStatus(pdu, CommandStatus.ESME_RINVCMDID);
      return;
    }
    if (this.state !== 'open') {
      this.respond(pdu, { command_status: CommandStatus.ESME_RALYBND });
      return;
    }
    this.state = 'binding';
    const finish = (decision: BindDecision): void => {
      if (this.state !== 'binding') return;
      if (decision.status === CommandStatus.ESME_ROK) {
        this.state = 'bound';
        this.bindType = BIND_TYPE_OF[pdu.command];
        this.systemId = pdu.system_id;
        this.respond(pdu, { system_id: decision.system_id ?? this.ownSystemId });
        this.emit('bound', this.bindType!);
      } else {
        this.state = 'open';
        this.respond(pdu, { command_status: decision.status });
      }
    };
    if (!this.authenticate) return finish({ status: CommandStatus.ESME_ROK });
    let decided: BindDecision | Promise<BindDecision>;
    try {
      decided = this.authenticate(pdu, this);
    } catch {
      return finish({ status: CommandStatus.ESME_RBINDFAIL });
    }
    Promise.resolve(decided).then(finish, () => finish({ status: CommandStatus.ESME_RBINDFAIL }));
  }

  // ------------------------------------------------------------ time

  private tick(): void {
    if (this.state === 'closed') return;
    const now = Date.now();
    if (this.window.inUse > 0 || this.window.queued > 0 || this.enquireOutstanding || this.state === 'binding' || this.state === 'unbinding') {
      this.window.expire(
        now,
        (seq, e) => {
          this.stats.timeouts++;
          e.reject(new SmppTimeoutError(e.command, seq, e.timeoutMs));
        },
        (w) => {
          this.stats.timeouts++;
          w.reject(new SmppTimeoutError(w.pdu.command, 0, w.timeoutMs));
        },
      );
      this.pump();
    }
    if (this.closed) return;
    const silentFor = now - this.lastReceivedAt;
    if (this.idleTimeoutMs > 0) {
      const unboundTooLong = this.role === 'server' && this.state !== 'bound' && now - this.openedAt >= this.idleTimeoutMs;
      if (silentFor >= this.idleTimeoutMs || unboundTooLong) {
        this.close('idle_timeout');
        return;
      }
    }
    if (this.enquireLinkIntervalMs > 0 && !this.enquireOutstanding && silentFor >= this.enquireLinkIntervalMs && this.state === 'bound') {
      this.enquireOutstanding = true;
      this.stats.enquireLinksSent++;
      this.control({ command: 'enquire_link' }, this.responseTimeoutMs).then(
        () => {
          this.enquireOutstanding = false;
        },
        (err) => {
          this.enquireOutstanding = false;
          if (err instanceof SmppTimeoutError) this.close('enquire_link_timeout', err);
        },
      );
    }
  }
}
