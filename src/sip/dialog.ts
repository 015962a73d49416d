import { SipHeaders } from './headers.js';
import type { SipRequest } from './message.js';
import { parseNameAddr } from './name-addr.js';
import type { SipTarget, TransportKind } from './transport.js';

export interface DialogInit {
  callId: string;
  localTag: string;
  remoteTag: string;
  /** Our From/To header value, with our tag. */
  localParty: string;
  /** Their From/To header value, with their tag. */
  remoteParty: string;
  localSeq: number;
  remoteTarget: string;
  /** Route set in the order requests carry it (a UAC reverses Record-Route before passing it). */
  routeSet: string[];
  transport: TransportKind;
  /** Where to send when the remote target cannot be resolved to a host:port (e.g. a non-SIP Contact). */
  fallback: SipTarget;
}

/** RFC 3261 12: the state for requests inside a dialog (CSeq, remote target, loose route set). */
export class Dialog {
  readonly callId: string;
  readonly localTag: string;
  readonly remoteTag: string;
  readonly localParty: string;
  readonly remoteParty: string;
  localSeq: number;
  remoteTarget: string;
  readonly routeSet: string[];
  private readonly transport: TransportKind;
  private readonly fallback: SipTarget;

  constructor(init: DialogInit) {
    this.callId = init.callId;
    this.localTag = init.localTag;
    this.remoteTag = init.remoteTag;
    this.localParty = init.localParty;
    this.remoteParty = init.remoteParty;
    this.localSeq = init.localSeq;
    this.remoteTarget = init.remoteTarget;
    this.routeSet = init.routeSet;
    this.transport = init.transport;
    this.fallback = init.fallback;
  }

  /** A new in-dialog request (without Via, which the sender adds). ACK reuses the INVITE's CSeq number. */
  createRequest(method: string, cseq?: number): SipRequest {
    const headers = new SipHeaders();
    for (const r of this.routeSet) headers.append('Route', r);
    headers.append('Max-Forwards', '70');
    headers.append('From', this.localParty);
    headers.append('To', this.remoteParty);
    headers.append('Call-ID', this.callId);
    const seq = cseq ?? ++this.localSeq;
    headers.append('CSeq', `${seq} ${method}`);
    return { kind: 'request', method, uri: this.remoteTarget, headers, body: '' };
  }

  /** The next hop: the first route (loose routing) or the remote target. Strict routers are not supported. */
  nextHop(): SipTarget {
    // a WebSocket peer is reached only over its connection, whatever its Contact says (RFC 7118 5)
    if (this.transport === 'ws' || this.transport === 'wss') return this.fallback;
    const first = this.routeSet[0];
    let uri;
    try {
      uri = parseNameAddr(first ?? `<${this.remoteTarget}>`).sip;
    } catch {
      uri = undefined;
    }
    if (!uri) return this.fallback;
    const t = uri.params.transport?.toLowerCase();
    const transport: TransportKind = t === 'tcp' ? 'tcp' : t === 'udp' ? 'udp' : this.transport;
    return { transport, host: uri.host, port: uri.port ?? (uri.scheme === 'sips' ? 5061 : 5060) };
  }
}
