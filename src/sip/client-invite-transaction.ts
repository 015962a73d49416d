import { SipHeaders } from './headers.js';
import { cseqOf, type SipRequest, type SipResponse } from './message.js';
import { TimerSet, type SipTimerConfig } from './timers.js';
import type { ClientTransactionUser, SendFn, TransactionState } from './transaction-types.js';

/**
 * RFC 3261 17.1.1 with RFC 6026's Accepted state: Timer A retransmits the INVITE on UDP (T1, doubling), Timer B
 * gives up after 64*T1, a non-2xx final is ACKed here (and its retransmissions re-ACKed), 2xx responses (and their
 * retransmissions, for 64*T1) go up to the UA core, which sends the end-to-end ACK.
 */
export class ClientInviteTransaction {
  state: TransactionState = 'calling';
  private readonly timers = new TimerSet();
  private ack: SipRequest | undefined;

  constructor(
    readonly request: SipRequest,
    private readonly send: SendFn,
    private readonly reliable: boolean,
    private readonly config: SipTimerConfig,
    private readonly user: ClientTransactionUser,
    private readonly onTerminated: () => void,
  ) {}

  start(): void {
    this.transmit(this.request);
    if (!this.reliable) this.scheduleA(this.config.t1);
    this.timers.set('B', 64 * this.config.t1, () => {
      if (this.state !== 'calling' && this.state !== 'proceeding') return;
      this.terminate();
      this.user.onTimeout();
    });
  }

  private scheduleA(interval: number): void {
    this.timers.set('A', interval, () => {
      if (this.state !== 'calling') return;
      this.transmit(this.request);
      this.scheduleA(interval * 2);
    });
  }

  receive(response: SipResponse): void {
    const { status } = response;
    switch (this.state) {
      case 'calling':
      case 'proceeding':
        if (status < 200) {
          this.state = 'proceeding';
          this.timers.clear('A');
          this.user.onResponse(response);
        } else if (status < 300) {
          this.state = 'accepted';
          this.timers.clearAll();
          this.timers.set('M', 64 * this.config.t1, () => this.terminate());
          this.user.onResponse(response);
        } else {
          this.state = 'completed';
          this.timers.clearAll();
          this.ack = this.buildAck(response);
          this.transmit(this.ack);
          this.timers.set('D', this.reliable ? 0 : 64 * this.config.t1, () => this.terminate());
          this.user.onResponse(response);
        }
        return;
      case 'accepted':
        if (status >= 200 && status < 300) this.user.onResponse(response); // the core re-ACKs
        return;
      case 'completed':
        if (status >= 300 && this.ack) this.transmit(this.ack);
        return;
      default:
        return;
    }
  }

  /** RFC 3261 17.1.1.3: the hop-by-hop ACK for a non-2xx final. */
  private buildAck(response: SipResponse): SipRequest {
    const req = this.request;
    const headers = new SipHeaders();
    headers.append('Via', req.headers.get('via') ?? '');
    for (const r of req.headers.getAll('route')) headers.append('Route', r);
    headers.append('Max-Forwards', '70');
    headers.append('From', req.headers.get('from') ?? '');
    headers.append('To', response.headers.get('to') ?? '');
    headers.append('Call-ID', req.headers.get('call-id') ?? '');
    headers.append('CSeq', `${cseqOf(req).seq} ACK`);
    return { kind: 'request', method: 'ACK', uri: req.uri, headers, body: '' };
  }

  private transmit(message: SipRequest): void {
    this.send(message).catch((err: Error) => {
      if (this.state === 'terminated') return;
      this.terminate();
      this.user.onTransportError(err);
    });
  }

  terminate(): void {
    if (this.state === 'terminated') return;
    this.state = 'terminated';
    this.timers.clearAll();
    this.onTerminated();
  }
}
