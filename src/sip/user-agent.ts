import { EventEmitter } from 'node:events';
import { newBranch, randomToken } from './branch.js';
import type { CallHost, DialogUser, ServerTransaction } from './call-host.js';
import { ClientInviteTransaction } from './client-invite-transaction.js';
import { ClientNonInviteTransaction } from './client-non-invite-transaction.js';
import { DigestServer } from './digest-server.js';
import { SipError, SipParseError, SipTimeoutError, SipTransportError } from './errors.js';
import { SipHeaders } from './headers.js';
import { IncomingCall } from './incoming-call.js';
import { callIdOf, cseqOf, fromOf, toOf, topVia, type SipMessage, type SipRequest, type SipResponse } from './message.js';
import { parseNameAddr, toNameAddr } from './name-addr.js';
import { OutgoingCall, type InviteOptions } from './outgoing-call.js';
import { buildResponse, type ResponseOptions } from './response.js';
import { ServerInviteTransaction } from './server-invite-transaction.js';
import { ServerNonInviteTransaction } from './server-non-invite-transaction.js';
import { DEFAULT_TIMERS, type SipTimerConfig } from './timers.js';
import type { ClientTransactionUser } from './transaction-types.js';
import { isReliable, SipTransport, type SipTarget, type SipTransportOptions, type TransportKind } from './transport.js';
import { BRANCH_MAGIC } from './via.js';
import type { SipWsTransport } from './ws-transport.js';

export interface UserAgentOptions extends SipTransportOptions {
  timers?: Partial<SipTimerConfig>;
  /** User-Agent / Server header value. */
  userAgent?: string;
  /** User part of our Contact (default 'ferry'). */
  contactUser?: string;
  /** Host written into Via and Contact (default: the bind host). */
  advertisedHost?: string;
  /** Challenge incoming INVITEs with digest (401) and accept only these users. */
  requireAuth?: { realm: string; users: Record<string, string>; nonceTtlMs?: number };
}

export interface UserAgentEvents {
  /** Socket problems and unparseable input, already handled; for logs. */
  warning: [error: Error];
  /**
   * A WebSocket connection closed. Calls through it have ended already (a transport error); a registrar drops the
   * bindings that named this flow.
   */
  flowClosed: [flow: SipTarget];
}

/** Answers out-of-dialog requests of one method; an async one that rejects answers 500, like one that throws. */
export type RequestHandler = (request: IncomingRequest) => void | Promise<void>;

/** An out-of-dialog request given to an `onRequest` handler, which must answer it (once, with a final status). */
export interface IncomingRequest {
  readonly request: SipRequest;
  /** Where it came from: for ws/wss the browser's connection, the only way to reach that browser. */
  readonly source: SipTarget;
  respond(status: number, options?: ResponseOptions): void;
}

export interface OptionsPingOptions {
  requestUri?: string;
  from?: string;
}

const ALLOW = 'INVITE, ACK, CANCEL, BYE, OPTIONS, UPDATE, INFO, REFER, NOTIFY';
const KNOWN_METHODS: ReadonlySet<string> = new Set(ALLOW.split(', '));
/** Methods the core answers itself; a handler cannot take them over. */
const CORE_METHODS: ReadonlySet<string> = new Set(['INVITE', 'ACK', 'CANCEL', 'BYE']);

type ClientTransaction = ClientInviteTransaction | ClientNonInviteTransaction;

/**
 * A SIP user agent (RFC 3261) over UDP and TCP, and WebSocket (RFC 7118) for browsers: outgoing calls (invite),
 * incoming calls (onInvite), OPTIONS both ways, other out-of-dialog requests (REGISTER) to handlers (onRequest). It
 * owns the transport and every transaction, and matches requests to dialogs. A call over a WebSocket flow ends
 * (a transport error) when that connection closes.
 */
export class UserAgent extends EventEmitter<UserAgentEvents> implements CallHost {
  readonly timers: SipTimerConfig;
  readonly userAgent: string;
  private readonly transport: SipTransport;
  private readonly contactUser: string;
  private readonly advertisedHost: string;
  private readonly digest: DigestServer | undefined;
  private readonly users: Record<string, string>;
  private readonly clientTxs = new Map<string, ClientTransaction>();
  private readonly serverTxs = new Map<string, ServerTransaction>();
  private readonly dialogs = new Map<string, DialogUser>();
  private readonly awaitingAck = new Map<string, ServerInviteTransaction>();
  private readonly offered = new Map<string, IncomingCall>(); // by INVITE transaction key, for CANCEL
  private inviteHandler: ((call: IncomingCall) => void) | undefined;
  private readonly requestHandlers = new Map<string, RequestHandler>();
  /** WebSocket flow id → what travels over it: dialogs (by dialog key) and client transactions (key → user). */
  private readonly flowDialogs = new Map<string, Set<string>>();
  private readonly dialogFlows = new Map<string, string>();
  private readonly flowClientTxs = new Map<string, Map<string, ClientTransactionUser>>();
  private closed = false;

  constructor(options: UserAgentOptions = {}) {
    super();
    this.timers = { ...DEFAULT_TIMERS, ...options.timers };
    this.userAgent = options.userAgent ?? 'Ferry';
    this.contactUser = options.contactUser ?? 'ferry';
    this.transport = new SipTransport(options);
    this.advertisedHost = options.advertisedHost ?? this.transport.host;
    this.users = options.requireAuth?.users ?? {};
    this.digest = options.requireAuth
      ? new DigestServer({ realm: options.requireAuth.realm, nonceTtlMs: options.requireAuth.nonceTtlMs })
      : undefined;
    this.transport.on('message', (msg, source) => this.onMessage(msg, source));
    this.transport.on('invalid', (err, source) => this.onInvalid(err, source));
    this.transport.on('warning', (err) => this.emit('warning', err));
    this.transport.on('flowClosed', (flow) => this.onFlowClosed(flow));
  }

  /** A listening user agent. */
  static async create(options: UserAgentOptions = {}): Promise<UserAgent> {
    const ua = new UserAgent(options);
    await ua.listen();
    return ua;
  }

  listen(): Promise<void> {
    return this.transport.listen();
  }

  get port(): number {
    return this.transport.port;
  }

  get host(): string {
    return this.advertisedHost;
  }

  /**
   * SIP over WebSocket: `ua.webSocket.attach(httpServer, { path: '/sip' })` serves browsers on an existing HTTP(S)
   * server, `ua.webSocket.listen({ port })` (or the `webSocket` option) on a port of its own. A browser's requests
   * arrive with a ws/wss `source` naming its connection; to call it, pass that target (a registrar keeps it per
   * binding) to invite() with its Contact as requestUri.
   */
  get webSocket(): SipWsTransport {
    return this.transport.webSocket;
  }

  /** Calls out; listen for the call's events before the next tick (responses arrive asynchronously). */
  invite(options: InviteOptions): OutgoingCall {
    const call = new OutgoingCall(this, options);
    if (this.closed) {
      queueMicrotask(() => call.emit('failed', 503, 'Service Unavailable'));
      return call;
    }
    this.bindFlow(options.target, call.callId, call.localTag);
    call.start();
    return call;
  }

  /** Out-of-dialog OPTIONS (keep-alive): resolves with the final status, rejects SipTimeoutError or SipTransportError. */
  options(target: SipTarget, options: OptionsPingOptions = {}): Promise<number> {
    const uri = options.requestUri ?? `sip:${target.host}:${target.port}`;
    const headers = new SipHeaders();
    headers.append('Max-Forwards', '70');
    headers.append('From', `${toNameAddr(options.from ?? `sip:${this.contactUser}@${this.advertisedHost}`)};tag=${randomToken()}`);
    headers.append('To', `<${uri}>`);
    headers.append('Call-ID', `${randomToken(12)}@${this.advertisedHost}`);
    headers.append('CSeq', '1 OPTIONS');
    headers.append('Contact', this.contact(target.transport));
    headers.append('User-Agent', this.userAgent);
    headers.append('Accept', 'application/sdp');
    const request: SipRequest = { kind: 'request', method: 'OPTIONS', uri, headers, body: '' };
    return new Promise((resolve, reject) => {
      if (this.closed) return reject(new SipTransportError('user agent closed'));
      this.startClientTransaction(request, target, {
        onResponse: (res) => {
          if (res.status >= 200) resolve(res.status);
        },
        onTimeout: () => reject(new SipTimeoutError('OPTIONS', 64 * this.timers.t1)),
        onTransportError: (err) => reject(err instanceof SipError ? err : new SipTransportError(err.message, { cause: err })),
      });
    });
  }

  /** Who answers incoming INVITEs; without a handler they get 480. */
  onInvite(handler: (call: IncomingCall) => void): void {
    this.inviteHandler = handler;
  }

  /**
   * Who answers out-of-dialog requests of `method` (REGISTER for a registrar, MESSAGE, SUBSCRIBE …; undefined
   * removes it). Methods with a handler are listed in Allow; without one, an unknown method gets 405. The handler
   * must respond once with a final status (a handler that throws answers 500). INVITE, ACK, CANCEL and BYE stay
   * with the core; OPTIONS is answered by the core unless a handler takes it.
   */
  onRequest(method: string, handler: RequestHandler | undefined): void {
    const m = method.toUpperCase();
    if (CORE_METHODS.has(m)) throw new SipError(`${m} is handled by the user agent core`);
    if (handler) this.requestHandlers.set(m, handler);
    else this.requestHandlers.delete(m);
  }

  private allow(): string {
    const extra = [...this.requestHandlers.keys()].filter((m) => !KNOWN_METHODS.has(m));
    return extra.length === 0 ? ALLOW : `${ALLOW}, ${extra.join(', ')}`;
  }

  /** Ends everything: a best-effort BYE for answered calls, every transaction and timer stopped, sockets closed. */
  async close(): Promise<void> {
    if (this.closed) return;
    const byes: Array<Promise<void>> = [];
    for (const user of [...this.dialogs.values()]) {
      const bye = user.abandon();
      if (bye) byes.push(this.sendRaw(bye.request, bye.target));
    }
    await Promise.allSettled(byes);
    this.closed = true;
    for (const tx of [...this.clientTxs.values(), ...this.serverTxs.values()]) tx.terminate();
    this.clientTxs.clear();
    this.serverTxs.clear();
    this.awaitingAck.clear();
    this.offered.clear();
    this.dialogs.clear();
    this.flowDialogs.clear();
    this.dialogFlows.clear();
    this.flowClientTxs.clear();
    await this.transport.close();
  }

  // CallHost

  contact(transport: TransportKind): string {
    return `<sip:${this.contactUser}@${this.advertisedHost}:${this.portFor(transport)}${transport === 'udp' ? '' : `;transport=${transport}`}>`;
  }

  /** The port written into Via and Contact: the WebSocket server's for ws/wss (no browser dials it from SIP, though). */
  private portFor(transport: TransportKind): number {
    if (transport === 'ws' || transport === 'wss') return this.transport.webSocket.port(transport === 'wss') || this.port;
    return this.port;
  }

  startClientTransaction(request: SipRequest, target: SipTarget, user: ClientTransactionUser): void {
    if (this.closed) {
      queueMicrotask(() => user.onTransportError(new SipTransportError('user agent closed')));
      return;
    }
    if (!request.headers.has('via')) request.headers.prepend('Via', this.via(target.transport, newBranch()));
    const key = `${topVia(request).branch}:${request.method}`;
    const reliable = isReliable(target.transport);
    const send = (m: SipMessage): Promise<void> => this.transport.send(m, target);
    const flowTxs = this.flowTxsOf(target);
    flowTxs?.set(key, user);
    const done = (): void => {
      if (this.clientTxs.get(key) === tx) this.clientTxs.delete(key);
      flowTxs?.delete(key);
      if (flowTxs?.size === 0 && this.flowClientTxs.get(target.flow!) === flowTxs) this.flowClientTxs.delete(target.flow!);
    };
    const tx: ClientTransaction = request.method === 'INVITE'
      ? new ClientInviteTransaction(request, send, reliable, this.timers, user, done)
      : new ClientNonInviteTransaction(request, send, reliable, this.timers, user, done);
    this.clientTxs.set(key, tx);
    tx.start();
  }

  sendStateless(request: SipRequest, target: SipTarget): void {
    void this.sendRaw(request, target);
  }

  private sendRaw(request: SipRequest, target: SipTarget): Promise<void> {
    request.headers.delete('via');
    request.headers.prepend('Via', this.via(target.transport, newBranch()));
    return this.transport.send(request, target).catch((err: Error) => void this.emit('warning', err));
  }

  respond(tx: ServerTransaction, request: SipRequest, status: number, extra: ResponseOptions = {}): void {
    const response = buildResponse(request, status, extra);
    response.headers.append('Server', this.userAgent);
    if (status >= 200 && status < 300 && request.method === 'INVITE') {
      this.awaitingAck.set(`${callIdOf(request)}:${cseqOf(request).seq}`, tx as ServerInviteTransaction);
    }
    tx.respond(response);
  }

  addDialog(callId: string, localTag: string, user: DialogUser): void {
    this.dialogs.set(`${callId};${localTag}`, user);
  }

  removeDialog(callId: string, localTag: string): void {
    const key = `${callId};${localTag}`;
    this.dialogs.delete(key);
    const flow = this.dialogFlows.get(key);
    if (flow === undefined) return;
    this.dialogFlows.delete(key);
    const keys = this.flowDialogs.get(flow);
    keys?.delete(key);
    if (keys?.size === 0) this.flowDialogs.delete(flow);
  }

  private via(transport: TransportKind, branch: string): string {
    return `SIP/2.0/${transport.toUpperCase()} ${this.advertisedHost}:${this.portFor(transport)};branch=${branch};rport`;
  }

  // WebSocket flows

  /** Remembers that a call goes over a WebSocket connection, so it can be ended when that closes. */
  private bindFlow(target: SipTarget, callId: string, localTag: string): void {
    if (target.flow === undefined) return;
    const key = `${callId};${localTag}`;
    let keys = this.flowDialogs.get(target.flow);
    if (!keys) this.flowDialogs.set(target.flow, (keys = new Set()));
    keys.add(key);
    this.dialogFlows.set(key, target.flow);
  }

  private flowTxsOf(target: SipTarget): Map<string, ClientTransactionUser> | undefined {
    if (target.flow === undefined) return undefined;
    let txs = this.flowClientTxs.get(target.flow);
    if (!txs) this.flowClientTxs.set(target.flow, (txs = new Map()));
    return txs;
  }

  /** Nothing more can be sent to or heard from that peer: fail what waits on it, end its calls, tell the registrar. */
  private onFlowClosed(flow: SipTarget): void {
    if (this.closed || flow.flow === undefined) return;
    const lost = new SipTransportError(`WebSocket connection ${flow.host}:${flow.port} closed`);
    for (const [key, user] of [...(this.flowClientTxs.get(flow.flow) ?? [])]) {
      this.clientTxs.get(key)?.terminate();
      user.onTransportError(lost);
    }
    this.flowClientTxs.delete(flow.flow);
    for (const key of [...(this.flowDialogs.get(flow.flow) ?? [])]) this.dialogs.get(key)?.transportLost?.();
    this.flowDialogs.delete(flow.flow);
    this.emit('flowClosed', flow);
  }

  // Incoming

  private onMessage(msg: SipMessage, source: SipTarget): void {
    if (this.closed) return;
    try {
      if (msg.kind === 'response') this.onResponse(msg);
      else this.receiveRequest(msg, source);
    } catch (err) {
      // a header the message checks did not cover (e.g. a bad Contact) must not take the UA down
      this.emit('warning', err instanceof Error ? err : new SipError(String(err)));
    }
  }

  private onResponse(res: SipResponse): void {
    const branch = topVia(res).branch;
    if (branch === undefined) return;
    this.clientTxs.get(`${branch}:${cseqOf(res).method}`)?.receive(res);
  }

  private onInvalid(err: SipParseError, source: SipTarget): void {
    this.emit('warning', err);
    const req = err.request;
    if (!req || req.method === 'ACK' || this.closed) return;
    const h = req.headers;
    if (!h.has('via') || !h.has('from') || !h.has('to') || !h.has('call-id') || !h.has('cseq')) return;
    const res = buildResponse(req, 400, { reason: `Bad Request (${err.reason})`.replace(/[\r\n]/g, ' ') });
    this.transport.send(res, source).catch(() => undefined);
  }

  private serverKey(req: SipRequest): string {
    const via = topVia(req);
    const method = req.method === 'ACK' ? 'INVITE' : req.method;
    if (via.branch?.startsWith(BRANCH_MAGIC)) return `${via.branch}:${via.host}:${via.port ?? ''}:${method}`;
    // RFC 2543 peers: match on the request's identity instead
    return `${callIdOf(req)}:${cseqOf(req).seq}:${fromOf(req).tag ?? ''}:${via.branch ?? ''}:${method}`;
  }

  private receiveRequest(req: SipRequest, source: SipTarget): void {
    const key = this.serverKey(req);
    if (req.method === 'ACK') return this.onAck(req, key);
    const existing = this.serverTxs.get(key);
    if (existing) return existing.receiveRequest(req);

    let owner: DialogUser | undefined; // who hears of a 2xx never ACKed
    const tx = this.newServerTransaction(req, source, key, () => owner?.onAckTimeout?.());
    if (req.method === 'CANCEL') return this.onCancel(req, tx, key);
    const handler = this.requestHandlers.get(req.method);
    if (!KNOWN_METHODS.has(req.method) && !handler) return this.respond(tx, req, 405, { headers: [['Allow', this.allow()]] });
    if (req.method === 'INVITE') this.respond(tx, req, 100);

    const toTag = toOf(req).tag;
    if (toTag !== undefined) {
      owner = this.dialogs.get(`${callIdOf(req)};${toTag}`);
      if (owner) return owner.onRequest(req, tx);
      if (!handler) return this.respond(tx, req, 481);
    }
    if (handler) return this.handOver(handler, req, source, tx);
    switch (req.method) {
      case 'INVITE':
        owner = this.onNewInvite(req, tx as ServerInviteTransaction, source, key);
        return;
      case 'OPTIONS':
        return this.respond(tx, req, 200, { headers: [['Allow', this.allow()], ['Accept', 'application/sdp']] });
      default:
        return this.respond(tx, req, 481);
    }
  }

  private handOver(handler: RequestHandler, request: SipRequest, source: SipTarget, tx: ServerTransaction): void {
    let answered = false;
    const incoming: IncomingRequest = {
      request,
      source,
      respond: (status, options) => {
        if (answered || this.closed) return;
        if (status >= 200) answered = true;
        this.respond(tx, request, status, options);
      },
    };
    const failed = (err: unknown): void => {
      this.emit('warning', err instanceof Error ? err : new SipError(String(err)));
      incoming.respond(500);
    };
    try {
      const pending = handler(incoming);
      if (pending) pending.catch(failed);
    } catch (err) {
      failed(err);
    }
  }

  private newServerTransaction(req: SipRequest, source: SipTarget, key: string, onAckTimeout: () => void): ServerTransaction {
    // responses go back where the request came from (the connection, or the datagram's source as with rport)
    const send = (m: SipMessage): Promise<void> => this.transport.send(m, source);
    const reliable = isReliable(source.transport);
    const ackKey = `${callIdOf(req)}:${cseqOf(req).seq}`;
    const done = (): void => {
      if (this.serverTxs.get(key) === tx) this.serverTxs.delete(key);
      if (this.awaitingAck.get(ackKey) === tx) this.awaitingAck.delete(ackKey);
      this.offered.delete(key);
    };
    const tx: ServerTransaction = req.method === 'INVITE'
      ? new ServerInviteTransaction(req, send, reliable, this.timers, onAckTimeout, done)
      : new ServerNonInviteTransaction(req, send, reliable, this.timers, done);
    this.serverTxs.set(key, tx);
    return tx;
  }

  private onAck(req: SipRequest, key: string): void {
    const tx = this.serverTxs.get(key);
    // the ACK for a non-2xx shares the INVITE's branch; a 2xx ACK normally has its own, but some peers reuse it
    if (tx && tx.state !== 'accepted') return tx.receiveRequest(req);
    const ackKey = `${callIdOf(req)}:${cseqOf(req).seq}`;
    this.awaitingAck.get(ackKey)?.ackReceived();
    this.awaitingAck.delete(ackKey);
    const toTag = toOf(req).tag;
    if (toTag !== undefined) this.dialogs.get(`${callIdOf(req)};${toTag}`)?.onAck(req);
  }

  private onCancel(req: SipRequest, tx: ServerTransaction, key: string): void {
    const inviteKey = key.replace(/:CANCEL$/, ':INVITE');
    const invite = this.serverTxs.get(inviteKey);
    if (!invite) return this.respond(tx, req, 481);
    this.respond(tx, req, 200);
    this.offered.get(inviteKey)?.cancelled();
  }

  private onNewInvite(req: SipRequest, tx: ServerInviteTransaction, source: SipTarget, key: string): DialogUser | undefined {
    let username: string | undefined;
    if (this.digest) {
      const header = req.headers.get('authorization');
      const verdict = header === undefined
        ? { ok: false as const, stale: false }
        : this.digest.verify(header, 'INVITE', (u) => (Object.hasOwn(this.users, u) ? this.users[u] : undefined));
      if (!verdict.ok) {
        this.respond(tx, req, 401, { toTag: randomToken(), headers: [['WWW-Authenticate', this.digest.challenge(verdict.stale)]] });
        return undefined;
      }
      username = verdict.username;
    }
    // the offer must name a reachable party; a Contact we cannot parse gets a 400 rather than a broken dialog
    const contact = req.headers.get('contact');
    if (contact !== undefined) {
      try {
        parseNameAddr(contact);
      } catch (err) {
        if (!(err instanceof SipParseError)) throw err;
        this.respond(tx, req, 400, { reason: 'Bad Contact' });
        return undefined;
      }
    }
    const call = new IncomingCall(this, req, tx, source, randomToken(), username);
    this.addDialog(call.callId, call.localTag, call);
    this.bindFlow(source, call.callId, call.localTag);
    this.offered.set(key, call);
    if (!this.inviteHandler) {
      call.reject(480);
      return call;
    }
    try {
      this.inviteHandler(call);
    } catch (err) {
      this.emit('warning', err instanceof Error ? err : new SipError(String(err)));
      call.reject(500);
    }
    return call;
  }
}
