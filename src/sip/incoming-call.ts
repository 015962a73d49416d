import { EventEmitter } from 'node:events';
import type { CallHost, DialogUser, ServerTransaction } from './call-host.js';
import { Dialog } from './dialog.js';
import type { SipRequest } from './message.js';
import { fromOf, toOf } from './message.js';
import { parseNameAddr, toNameAddr, type NameAddr } from './name-addr.js';
import type { EndInfo } from './outgoing-call.js';
import type { ServerInviteTransaction } from './server-invite-transaction.js';
import type { SipTarget } from './transport.js';
import { sendBye } from './send-bye.js';
import { receiveNotify, receiveRefer, sendRefer, type IncomingRefer, type ReferAnswer, type ReferProgress } from './refer.js';

export interface IncomingCallEvents {
  /** The caller sent CANCEL before a final response: 200 to the CANCEL and 487 to the INVITE have gone out. */
  cancelled: [];
  /** The ACK for our 2xx arrived. */
  ack: [];
  ended: [info: EndInfo];
  /** The far end asks us to transfer (REFER): accept or reject it in the listener, or it is refused. */
  refer: [refer: IncomingRefer];
  /** How a transfer we asked for goes (NOTIFY of the refer package). */
  referProgress: [progress: ReferProgress];
}

export type IncomingCallState = 'offered' | 'answered' | 'confirmed' | 'terminating' | 'ended' | 'rejected' | 'redirected' | 'cancelled';

/** The UAS side of one call: ring, answer, reject, BYE either way, CANCEL. */
export class IncomingCall extends EventEmitter<IncomingCallEvents> implements DialogUser {
  readonly callId: string;
  readonly localTag: string;
  readonly remoteTag: string;
  readonly from: NameAddr;
  readonly to: NameAddr;
  /** The offer in the INVITE ('' when the INVITE had no body). */
  readonly sdp: string;
  /** The authenticated username when the UA requires digest auth. */
  readonly username: string | undefined;
  state: IncomingCallState = 'offered';
  private dialog: Dialog | undefined;
  private localSdp = '';

  constructor(
    private readonly host: CallHost,
    readonly request: SipRequest,
    private readonly tx: ServerInviteTransaction,
    readonly source: SipTarget,
    localTag: string,
    username?: string,
  ) {
    super();
    this.callId = request.headers.get('call-id') ?? '';
    this.localTag = localTag;
    this.from = fromOf(request);
    this.to = toOf(request);
    this.remoteTag = this.from.tag ?? '';
    this.sdp = request.body;
    this.username = username;
  }

  /**
   * Sends a provisional (180 Ringing or 183 Session Progress, optionally with early-media SDP); `headers` are added
   * (an application's own, e.g. the id it gave the call).
   */
  ring(code: 180 | 183 = 180, sdp?: string, headers: ReadonlyArray<[string, string]> = []): void {
    if (this.state !== 'offered') return;
    this.host.respond(this.tx, this.request, code, { toTag: this.localTag, body: sdp, headers: [['Contact', this.host.contact(this.source.transport)], ...headers] });
  }

  answer(sdp: string, headers: ReadonlyArray<[string, string]> = []): void {
    if (this.state !== 'offered') return;
    this.state = 'answered';
    this.localSdp = sdp;
    this.dialog = this.makeDialog();
    this.host.respond(this.tx, this.request, 200, { toTag: this.localTag, body: sdp, headers: [['Contact', this.host.contact(this.source.transport)], ...headers] });
  }

  reject(code: number, reason?: string): void {
    if (this.state !== 'offered') return;
    this.state = 'rejected';
    this.host.removeDialog(this.callId, this.localTag);
    this.host.respond(this.tx, this.request, code < 300 ? 480 : code, { toTag: this.localTag, reason });
  }

  /**
   * Sends the caller elsewhere before answering (RFC 3261 8.3.1): a 3xx (302 Moved Temporarily by default) whose
   * Contact is `contact`, a SIP URI or name-addr. The caller, not this UA, places the new INVITE.
   */
  redirect(contact: string, code: 301 | 302 = 302): void {
    if (this.state !== 'offered') return;
    this.state = 'redirected';
    this.host.removeDialog(this.callId, this.localTag);
    this.host.respond(this.tx, this.request, code, { toTag: this.localTag, headers: [['Contact', toNameAddr(contact)]] });
  }

  /** Asks the caller's side to call `referTo` instead (blind transfer): see OutgoingCall.refer. */
  refer(referTo: string): Promise<ReferAnswer> {
    if ((this.state !== 'answered' && this.state !== 'confirmed') || !this.dialog) return Promise.resolve({ status: 481, reason: 'Call/Transaction Does Not Exist' });
    return sendRefer(this.host, this.dialog, this.host.contact(this.source.transport), referTo, `${this.request.headers.get('to') ?? ''}`);
  }

  /** Hangs up an answered call. */
  bye(): void {
    if (this.state !== 'answered' && this.state !== 'confirmed') return;
    this.hangUp('bye');
  }

  private hangUp(reason: string): void {
    const dialog = this.dialog!;
    this.state = 'terminating';
    sendBye(this.host, dialog, () => this.end({ by: 'local', reason }));
  }

  private makeDialog(): Dialog {
    const req = this.request;
    let remoteTarget = fromOf(req).uri;
    const contact = req.headers.get('contact');
    if (contact !== undefined) {
      try {
        remoteTarget = parseNameAddr(contact).uri;
      } catch {
        // keep the From URI
      }
    }
    return new Dialog({
      callId: this.callId, localTag: this.localTag, remoteTag: this.remoteTag,
      localParty: `${req.headers.get('to') ?? ''};tag=${this.localTag}`, remoteParty: req.headers.get('from') ?? '',
      localSeq: 0, remoteTarget, routeSet: req.headers.getAll('record-route'),
      transport: this.source.transport, fallback: this.source,
    });
  }

  /** The UA core got a CANCEL for our INVITE. */
  cancelled(): void {
    if (this.state !== 'offered') return;
    this.state = 'cancelled';
    this.host.removeDialog(this.callId, this.localTag);
    this.host.respond(this.tx, this.request, 487, { toTag: this.localTag });
    this.emit('cancelled');
  }

  onRequest(request: SipRequest, tx: ServerTransaction): void {
    switch (request.method) {
      case 'BYE':
        this.host.respond(tx, request, 200);
        if (this.state === 'answered' || this.state === 'confirmed' || this.state === 'terminating') this.end({ by: 'remote', reason: 'bye' });
        return;
      case 'INVITE':
        this.host.respond(tx, request, 200, { body: this.localSdp, headers: [['Contact', this.host.contact(this.source.transport)]] });
        return;
      case 'UPDATE':
        this.host.respond(tx, request, 200, request.body === '' ? {} : { body: this.localSdp });
        return;
      case 'REFER':
        return receiveRefer(this.state === 'answered' || this.state === 'confirmed' ? this.dialog : undefined, this.host, request, tx, (refer) => this.emit('refer', refer));
      case 'NOTIFY':
        return receiveNotify(this.host, request, tx, (progress) => this.emit('referProgress', progress));
      default:
        this.host.respond(tx, request, 200);
    }
  }

  onAck(_request: SipRequest): void {
    if (this.state !== 'answered') return;
    this.state = 'confirmed';
    this.emit('ack');
  }

  /** The caller's WebSocket connection closed: an offered call is withdrawn (`cancelled`), an answered one ends. */
  transportLost(): void {
    if (this.state === 'offered') {
      this.state = 'cancelled';
      this.host.removeDialog(this.callId, this.localTag);
      this.emit('cancelled');
      return;
    }
    if (this.state === 'answered' || this.state === 'confirmed' || this.state === 'terminating') this.end({ by: 'remote', reason: 'transport closed' });
  }

  onAckTimeout(): void {
    if (this.state === 'answered') this.hangUp('no ACK');
  }

  /** UA shutdown: stop without waiting; returns the BYE to send best-effort, if answered. */
  abandon(): { request: SipRequest; target: SipTarget } | undefined {
    const dialog = this.state === 'answered' || this.state === 'confirmed' ? this.dialog : undefined;
    this.state = 'ended';
    this.host.removeDialog(this.callId, this.localTag);
    return dialog ? { request: dialog.createRequest('BYE'), target: dialog.nextHop() } : undefined;
  }

  private end(info: EndInfo): void {
    if (this.state === 'ended') return;
    this.state = 'ended';
    this.host.removeDialog(this.callId, this.localTag);
    this.emit('ended', info);
  }
}
