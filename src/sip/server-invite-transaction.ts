import type { SipRequest, SipResponse } from './message.js';
import { TimerSet, type SipTimerConfig } from './timers.js';
import type { SendFn, TransactionState } from './transaction-types.js';

/**
 * RFC 3261 17.2.1, simplified: a retransmitted INVITE gets the last response again; a non-2xx final is retransmitted
 * on UDP (Timer G, T1 doubling to T2) until the ACK (same branch) or Timer H (64*T1). Unlike the RFC, where the UA
 * core retransmits a 2xx, this transaction does it too, the same way, until the UA core reports the ACK
 * (ackReceived) or 64*T1 passes, when onAckTimeout fires (the core then hangs up).
 */
export class ServerInviteTransaction {
  state: TransactionState = 'proceeding';
  private readonly timers = new TimerSet();
  private last: SipResponse | undefined;

  constructor(
    readonly request: SipRequest,
    private readonly send: SendFn,
    private readonly reliable: boolean,
    private readonly config: SipTimerConfig,
    private readonly onAckTimeout: () => void,
    private readonly onTerminated: () => void,
  ) {}

  get lastResponse(): SipResponse | undefined {
    return this.last;
  }

  /** Whether a final response has gone out. */
  get finished(): boolean {
    return this.state !== 'proceeding';
  }

  respond(response: SipResponse): void {
    if (this.state !== 'proceeding') return;
    this.last = response;
    this.transmit(response);
    if (response.status < 200) return;
    this.state = response.status < 300 ? 'accepted' : 'completed';
    if (!this.reliable) this.scheduleG(this.config.t1);
    this.timers.set('H', 64 * this.config.t1, () => {
      const wasAccepted = this.state === 'accepted';
      this.terminate();
      if (wasAccepted) this.onAckTimeout();
    });
  }

  private scheduleG(interval: number): void {
    this.timers.set('G', interval, () => {
      if (this.state !== 'accepted' && this.state !== 'completed') return;
      if (this.last) this.transmit(this.last);
      this.scheduleG(Math.min(interval * 2, this.config.t2));
    });
  }

  /** A request matching this transaction: the INVITE again, or the ACK for a non-2xx. */
  receiveRequest(request: SipRequest): void {
    if (request.method === 'ACK') {
      if (this.state === 'completed') this.confirm();
      return;
    }
    if (this.last && this.state !== 'confirmed' && this.state !== 'terminated') this.transmit(this.last);
  }

  /**
   * The UA core matched the ACK of our 2xx (a separate transaction on the wire). The transaction lingers for 64*T1
   * (RFC 6026 Timer L) so a late copy of the INVITE is absorbed instead of starting a second call.
   */
  ackReceived(): void {
    if (this.state !== 'accepted') return;
    this.state = 'confirmed';
    this.timers.clearAll();
    this.timers.set('L', 64 * this.config.t1, () => this.terminate());
  }

  private confirm(): void {
    this.state = 'confirmed';
    this.timers.clearAll();
    this.timers.set('I', this.reliable ? 0 : this.config.t4, () => this.terminate());
  }

  private transmit(response: SipResponse): void {
    this.send(response).catch(() => undefined); // the transport reports it; a UAS has no one else to tell
  }

  terminate(): void {
    if (this.state === 'terminated') return;
    this.state = 'terminated';
    this.timers.clearAll();
    this.onTerminated();
  }
}
