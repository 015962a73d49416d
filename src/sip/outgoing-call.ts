import { EventEmitter } from 'node:events';
import { randomToken } from './branch.js';
import type { CallHost, DialogUser, ServerTransaction } from './call-host.js';
import { buildAuthorization, parseChallenge, type DigestCredentials } from './digest.js';
import { Dialog } from './dialog.js';
import { SipParseError } from './errors.js';
import { SipHeaders } from './headers.js';
import { cseqOf, toOf, type SipRequest, type SipResponse } from './message.js';
import { parseNameAddr, toNameAddr } from './name-addr.js';
import { parseUri, type SipUri } from './uri.js';
import type { SipTarget } from './transport.js';
import { sendBye } from './send-bye.js';
import { receiveNotify, receiveRefer, sendRefer, type IncomingRefer, type ReferAnswer, type ReferProgress } from './refer.js';

export interface EndInfo {
  by: 'local' | 'remote';
  reason: string;
}

export interface OutgoingCallEvents {
  /** 101–199 (100 Trying is not surfaced); sdp when the response carries a body (early media). */
  provisional: [code: number, reason: string, sdp: string | undefined];
  /** A 2xx arrived and its ACK has been sent. */
  answered: [sdp: string];
  /** A final ≥ 300, Timer B (408) or a transport failure (503). */
  failed: [code: number, reason: string];
  /** A 3xx was followed (`followRedirects`): the same call goes on as a new INVITE to `uri` (its first Contact). */
  redirected: [code: number, uri: string];
  ended: [info: EndInfo];
  /** The far end asks us to transfer (REFER): accept or reject it in the listener, or it is refused. */
  refer: [refer: IncomingRefer];
  /** How a transfer we asked for goes (NOTIFY of the refer package). */
  referProgress: [progress: ReferProgress];
}

export interface InviteOptions {
  target: SipTarget;
  /** Default: the To URI. */
  requestUri?: string;
  /** A URI or name-addr; the local tag is added. */
  from: string;
  to: string;
  sdp: string;
  credentials?: DigestCredentials;
  /** Extra headers for the INVITE (e.g. P-Asserted-Identity). */
  headers?: Array<[string, string]>;
  /**
   * How many 301/302 answers to follow, as a carrier does: a new INVITE of the same call (Call-ID, From tag, next
   * CSeq) to the first Contact's URI, over UDP or TCP. Default 0: a redirect fails the call like any final ≥ 300
   * (Ferry's own calls to trunks never go where a trunk's answer points).
   */
  followRedirects?: number;
}

export type OutgoingCallState = 'calling' | 'early' | 'confirmed' | 'terminating' | 'ended' | 'failed';

/**
 * The UAC side of one call: INVITE (one digest retry), provisional and final responses, the end-to-end ACK,
 * CANCEL (sent once a provisional has arrived, as RFC 3261 9.1 asks) and BYE either way.
 */
export class OutgoingCall extends EventEmitter<OutgoingCallEvents> implements DialogUser {
  readonly callId: string;
  readonly localTag: string;
  remoteTag: string | undefined;
  state: OutgoingCallState = 'calling';
  private invite: SipRequest;
  private dialog: Dialog | undefined;
  private gotProvisional = false;
  private cancelRequested = false;
  private cancelSent = false;
  private authRetried = false;
  private redirectsLeft: number;
  /** Where the INVITE goes: the caller's target, then the Contact of a redirect followed. */
  private target: SipTarget;
  private readonly localSdp: string;

  constructor(private readonly host: CallHost, private readonly options: InviteOptions) {
    super();
    this.callId = `${randomToken(12)}@${options.target.host}`;
    this.localTag = randomToken();
    this.localSdp = options.sdp;
    this.target = options.target;
    this.redirectsLeft = options.followRedirects ?? 0;
    const headers = new SipHeaders();
    headers.append('Max-Forwards', '70');
    headers.append('From', `${toNameAddr(options.from)};tag=${this.localTag}`);
    headers.append('To', toNameAddr(options.to));
    headers.append('Call-ID', this.callId);
    headers.append('CSeq', '1 INVITE');
    headers.append('Contact', host.contact(options.target.transport));
    headers.append('User-Agent', host.userAgent);
    headers.append('Allow', 'INVITE, ACK, CANCEL, BYE, OPTIONS, UPDATE, INFO, REFER, NOTIFY');
    for (const [n, v] of options.headers ?? []) headers.append(n, v);
    const uri = options.requestUri ?? parseNameAddr(toNameAddr(options.to)).uri;
    this.invite = { kind: 'request', method: 'INVITE', uri, headers, body: options.sdp };
    if (options.sdp !== '') headers.append('Content-Type', 'application/sdp');
  }

  /** Sends the INVITE (called by the UA right after construction so listeners can be attached first). */
  start(): void {
    this.host.addDialog(this.callId, this.localTag, this);
    this.sendInvite();
  }

  private sendInvite(): void {
    this.host.startClientTransaction(this.invite, this.target, {
      onResponse: (res) => this.onInviteResponse(res),
      onTimeout: () => this.fail(408, 'Request Timeout'),
      onTransportError: () => this.fail(503, 'Service Unavailable'),
    });
  }

  private onInviteResponse(res: SipResponse): void {
    if (cseqOf(res).seq !== cseqOf(this.invite).seq) return; // a late answer to the challenged INVITE
    const { status } = res;
    if (status < 200) {
      if (this.state !== 'calling' && this.state !== 'early') return;
      this.gotProvisional = true;
      if (this.cancelRequested && !this.cancelSent) this.sendCancel();
      if (status === 100) return;
      this.state = 'early';
      this.remoteTag = this.remoteTag ?? toOf(res).tag;
      this.emit('provisional', status, res.reason, res.body === '' ? undefined : res.body);
      return;
    }
    if (status < 300) return this.onSuccess(res);
    if ((status === 401 || status === 407) && this.options.credentials && !this.authRetried && !this.cancelRequested) {
      if (this.retryWithCredentials(res)) return;
    }
    if (this.cancelRequested && status === 487) return this.fail(487, res.reason || 'Request Terminated');
    if ((status === 301 || status === 302) && this.redirectsLeft > 0 && !this.cancelRequested && this.followRedirect(res)) return;
    this.fail(status, res.reason);
  }

  /** Sends the INVITE again to the redirect's first Contact; false when there is none this UA can reach. */
  private followRedirect(res: SipResponse): boolean {
    const contact = res.headers.get('contact');
    if (contact === undefined || this.target.flow !== undefined) return false;
    let uri: SipUri;
    let text: string;
    try {
      text = parseNameAddr(contact).uri;
      uri = parseUri(text);
    } catch (err) {
      if (err instanceof SipParseError) return false;
      throw err;
    }
    const transport = (uri.params.transport ?? this.target.transport).toLowerCase();
    if (uri.scheme !== 'sip' || !isRedirectTransport(transport)) return false;
    this.redirectsLeft--;
    this.target = { transport, host: uri.host, port: uri.port ?? 5060 };
    const headers = this.invite.headers.clone();
    headers.delete('via');
    headers.delete('authorization');
    headers.delete('proxy-authorization');
    headers.set('CSeq', `${cseqOf(this.invite).seq + 1} INVITE`);
    headers.set('Contact', this.host.contact(transport));
    this.invite = { ...this.invite, uri: text, headers };
    this.gotProvisional = false;
    this.authRetried = false;
    this.remoteTag = undefined;
    this.state = 'calling';
    this.emit('redirected', res.status, text);
    this.sendInvite();
    return true;
  }

  private retryWithCredentials(res: SipResponse): boolean {
    const proxy = res.status === 407;
    const header = res.headers.get(proxy ? 'proxy-authenticate' : 'www-authenticate');
    if (header === undefined) return false;
    let challenge;
    try {
      challenge = parseChallenge(header);
    } catch (err) {
      if (err instanceof SipParseError) return false;
      throw err;
    }
    this.authRetried = true;
    const headers = this.invite.headers.clone();
    headers.delete('via');
    headers.set('CSeq', `${cseqOf(this.invite).seq + 1} INVITE`);
    headers.append(proxy ? 'Proxy-Authorization' : 'Authorization', buildAuthorization({
      challenge, credentials: this.options.credentials!, method: 'INVITE', uri: this.invite.uri,
    }));
    this.invite = { ...this.invite, headers };
    this.gotProvisional = false;
    this.state = 'calling';
    this.sendInvite();
    return true;
  }

  private onSuccess(res: SipResponse): void {
    const tag = toOf(res).tag ?? '';
    if (this.dialog) {
      // a retransmitted 2xx gets the same ACK again; a 2xx from another fork is ACKed and hung up
      const ack = this.dialog.remoteTag === tag ? this.dialog : this.dialogFrom(res, tag);
      this.host.sendStateless(this.ackFor(ack), ack.nextHop());
      if (ack !== this.dialog) this.host.sendStateless(ack.createRequest('BYE'), ack.nextHop());
      return;
    }
    if (this.state !== 'calling' && this.state !== 'early') return;
    this.remoteTag = tag;
    this.dialog = this.dialogFrom(res, tag);
    this.host.sendStateless(this.ackFor(this.dialog), this.dialog.nextHop());
    this.state = 'confirmed';
    this.emit('answered', res.body);
    if (this.cancelRequested) this.hangUp('cancelled');
  }

  private dialogFrom(res: SipResponse, remoteTag: string): Dialog {
    const contact = res.headers.get('contact');
    let remoteTarget = this.invite.uri;
    if (contact !== undefined) {
      try {
        remoteTarget = parseNameAddr(contact).uri;
      } catch {
        // keep the Request-URI: better than dropping the call
      }
    }
    return new Dialog({
      callId: this.callId, localTag: this.localTag, remoteTag,
      localParty: this.invite.headers.get('from') ?? '', remoteParty: res.headers.get('to') ?? '',
      localSeq: cseqOf(this.invite).seq, remoteTarget,
      routeSet: res.headers.getAll('record-route').reverse(),
      transport: this.target.transport, fallback: this.target,
    });
  }

  private ackFor(dialog: Dialog): SipRequest {
    const ack = dialog.createRequest('ACK', cseqOf(this.invite).seq);
    ack.headers.append('Contact', this.host.contact(this.target.transport));
    return ack;
  }

  /**
   * Cancels a call not yet answered: the CANCEL goes out once a provisional arrived, the 487 that follows ends it
   * in `failed(487)`. If a 2xx wins the race the call is ACKed and hung up (`answered` then `ended`).
   */
  cancel(): void {
    if (this.state !== 'calling' && this.state !== 'early') return;
    this.cancelRequested = true;
    if (this.gotProvisional && !this.cancelSent) this.sendCancel();
  }

  private sendCancel(): void {
    this.cancelSent = true;
    const inv = this.invite;
    const headers = new SipHeaders();
    headers.append('Via', inv.headers.get('via') ?? '');
    for (const r of inv.headers.getAll('route')) headers.append('Route', r);
    headers.append('Max-Forwards', '70');
    headers.append('From', inv.headers.get('from') ?? '');
    headers.append('To', inv.headers.get('to') ?? '');
    headers.append('Call-ID', this.callId);
    headers.append('CSeq', `${cseqOf(inv).seq} CANCEL`);
    const cancel: SipRequest = { kind: 'request', method: 'CANCEL', uri: inv.uri, headers, body: '' };
    // the outcome of the CANCEL itself does not matter: the INVITE's final response decides
    this.host.startClientTransaction(cancel, this.target, { onResponse: () => undefined, onTimeout: () => undefined, onTransportError: () => undefined });
  }

  /**
   * Asks the far end to call `referTo` instead (blind transfer, RFC 3515): the answer to the REFER (202 accepted, or
   * the refusal), then `referProgress` events as the transfer goes. The call stays up until someone hangs up.
   */
  refer(referTo: string): Promise<ReferAnswer> {
    if (this.state !== 'confirmed' || !this.dialog) return Promise.resolve({ status: 481, reason: 'Call/Transaction Does Not Exist' });
    return sendRefer(this.host, this.dialog, this.host.contact(this.target.transport), referTo, this.invite.headers.get('from'));
  }

  /** Hangs up an answered call (BYE); before an answer it cancels instead. */
  bye(): void {
    if (this.state === 'calling' || this.state === 'early') return this.cancel();
    if (this.state === 'confirmed') this.hangUp('bye');
  }

  private hangUp(reason: string): void {
    const dialog = this.dialog!;
    this.state = 'terminating';
    sendBye(this.host, dialog, () => this.end({ by: 'local', reason }));
  }

  /** In-dialog requests from the far end. */
  onRequest(request: SipRequest, tx: ServerTransaction): void {
    switch (request.method) {
      case 'BYE':
        this.host.respond(tx, request, 200);
        if (this.state === 'confirmed' || this.state === 'terminating') this.end({ by: 'remote', reason: 'bye' });
        return;
      case 'INVITE':
        // re-INVITE: tolerated, answered with the SDP we already offered (no renegotiation)
        if (this.dialog && request.headers.get('contact') !== undefined) {
          try {
            this.dialog.remoteTarget = parseNameAddr(request.headers.get('contact')!).uri;
          } catch {
            // keep the old target
          }
        }
        this.host.respond(tx, request, 200, { body: this.localSdp, headers: [['Contact', this.host.contact(this.target.transport)]] });
        return;
      case 'UPDATE':
        this.host.respond(tx, request, 200, request.body === '' ? {} : { body: this.localSdp });
        return;
      case 'REFER':
        return receiveRefer(this.state === 'confirmed' ? this.dialog : undefined, this.host, request, tx, (refer) => this.emit('refer', refer));
      case 'NOTIFY':
        return receiveNotify(this.host, request, tx, (progress) => this.emit('referProgress', progress));
      default:
        this.host.respond(tx, request, 200);
    }
  }

  onAck(_request: SipRequest): void {
    // the ACK of a re-INVITE's 200: the transaction layer already stopped retransmitting
  }

  /** The callee's WebSocket connection closed: an unanswered call fails with 503, an answered one ends. */
  transportLost(): void {
    if (this.state === 'calling' || this.state === 'early') return this.fail(503, 'Service Unavailable');
    if (this.state === 'confirmed' || this.state === 'terminating') this.end({ by: 'remote', reason: 'transport closed' });
  }

  /** Stops the call without signalling (UA shutdown): returns the BYE to send best-effort, if answered. */
  abandon(): { request: SipRequest; target: SipTarget } | undefined {
    const dialog = this.state === 'confirmed' ? this.dialog : undefined;
    this.state = 'ended';
    this.host.removeDialog(this.callId, this.localTag);
    return dialog ? { request: dialog.createRequest('BYE'), target: dialog.nextHop() } : undefined;
  }

  private fail(code: number, reason: string): void {
    if (this.state !== 'calling' && this.state !== 'early') return;
    this.state = 'failed';
    this.host.removeDialog(this.callId, this.localTag);
    this.emit('failed', code, reason);
  }

  private end(info: EndInfo): void {
    if (this.state === 'ended') return;
    this.state = 'ended';
    this.host.removeDialog(this.callId, this.localTag);
    this.emit('ended', info);
  }
}

/** The transports a redirect may move a call to: a browser's WebSocket is reached only over its own connection. */
function isRedirectTransport(transport: string): transport is 'udp' | 'tcp' {
  return transport === 'udp' || transport === 'tcp';
}
