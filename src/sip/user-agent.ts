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
import { SipTransport, type SipTarget, type SipTransportOptions, type TransportKind } from './transport.js';
import { BRANCH_MAGIC } from './via.js';

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
}

export interface OptionsPingOptions {
  requestUri?: string;
  from?: string;
}

const ALLOW = 'INVITE, ACK, CANCEL, BYE, OPTIONS, UPDATE, INFO, REFER, NOTIFY';
const KNOWN_METHODS: ReadonlySet<string> = new Set(ALLOW.split(', '));

type ClientTransaction = ClientInviteTransaction | ClientNonInviteTransaction;

/**
 * A SIP user agent (RFC 3261) over UDP and TCP: outgoing calls (invite), incoming calls (onInvite), OPTIONS both
 * ways. It owns the transport and every transaction, and matches requests to dialogs.
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

  /** Calls out; listen for the call's events before the next tick (responses arrive asynchronously). */
  invite(options: InviteOptions): OutgoingCall {
    const call = new OutgoingCall(this, options);
    if (this.closed) {
      queueMicrotask(() => call.emit('failed', 503, 'Service Unavailable'));
      return call;
    }
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
    await this.transport.close();
  }

  // CallHost

  contact(transport: TransportKind): string {
    return `<sip:${this.contactUser}@${this.advertisedHost}:${this.port}${transport === 'tcp' ? ';transport=tcp' : ''}>`;
  }

  startClientTransaction(request: SipRequest, target: SipTarget, user: ClientTransactionUser): void {
    if (this.closed) {
      queueMicrotask(() => user.onTransportError(new SipTransportError('user agent closed')));
      return;
    }
    if (!request.headers.has('via')) request.headers.prepend('Via', this.via(target.transport, newBranch()));
    const key = `${topVia(request).branch}:${request.method}`;
    const reliable = target.transport === 'tcp';
    const send = (m: SipMessage): Promise<void> => this.transport.send(m, target);
    const done = (): void => {
      if (this.clientTxs.get(key) === tx) this.clientTxs.delete(key);
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
    this.dialogs.delete(`${callId};${localTag}`);
  }

  private via(transport: TransportKind, branch: string): string {
    return `SIP/2.0/${transport.toUpperCase()} ${this.advertisedHost}:${this.port};branch=${branch};rport`;
  }

  // Incoming

  private onMessage(msg: SipMessage, source: SipTarget): void {
    if (this.closed) return;
    try {
      if (msg.kind === 'response') this.onResponse(msg);
      else this.onRequest(msg, source);
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

  private onRequest(req: SipRequest, source: SipTarget): void {
    const key = this.serverKey(req);
    if (req.method === 'ACK') return this.onAck(req, key);
    const existing = this.serverTxs.get(key);
    if (existing) return existing.receiveRequest(req);

    let owner: DialogUser | undefined; // who hears of a 2xx never ACKed
    const tx = this.newServerTransaction(req, source, key, () => owner?.onAckTimeout?.());
    if (req.method === 'CANCEL') return this.onCancel(req, tx, key);
    if (!KNOWN_METHODS.has(req.method)) return this.respond(tx, req, 405, { headers: [['Allow', ALLOW]] });
    if (req.method === 'INVITE') this.respond(tx, req, 100);

    const toTag = toOf(req).tag;
    if (toTag !== undefined) {
      owner = this.dialogs.get(`${callIdOf(req)};${toTag}`);
      if (!owner) return this.respond(tx, req, 481);
      return owner.onRequest(req, tx);
    }
    switch (req.method) {
      case 'INVITE':
        owner = this.onNewInvite(req, tx as ServerInviteTransaction, source, key);
        return;
      case 'OPTIONS':
        return this.respond(tx, req, 200, { headers: [['Allow', ALLOW], ['Accept', 'application/sdp']] });
      default:
        return this.respond(tx, req, 481);
    }
  }

  private newServerTransaction(req: SipRequest, source: SipTarget, key: string, onAckTimeout: () => void): ServerTransaction {
    // responses go back where the request came from (the connection, or the datagram's source as with rport)
    const send = (m: SipMessage): Promise<void> => this.transport.send(m, source);
    const reliable = source.transport === 'tcp';
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
