import type { SipRequest, SipResponse } from './message.js';
import { TimerSet, type SipTimerConfig } from './timers.js';
import type { ClientTransactionUser, SendFn, TransactionState } from './transaction-types.js';

/**
 * RFC 3261 17.1.2: Timer E retransmits on UDP (T1 doubling up to T2; T2 once a provisional came), Timer F gives up
 * after 64*T1, Timer K (T4 on UDP) absorbs retransmitted finals.
 */
export class ClientNonInviteTransaction {
  state: TransactionState = 'trying';
  private readonly timers = new TimerSet();

  constructor(
    readonly request: SipRequest,
    private readonly send: SendFn,
    private readonly reliable: boolean,
    private readonly config: SipTimerConfig,
    private readonly user: ClientTransactionUser,
    private readonly onTerminated: () => void,
  ) {}

  start(): void {
    this.transmit();
    if (!this.reliable) this.scheduleE(this.config.t1);
    this.timers.set('F', 64 * this.config.t1, () => {
      this.terminate();
      this.user.onTimeout();
    });
  }

  private scheduleE(interval: number): void {
    this.timers.set('E', interval, () => {
      if (this.state !== 'trying' && this.state !== 'proceeding') return;
      this.transmit();
      const next = this.state === 'proceeding' ? this.config.t2 : Math.min(interval * 2, this.config.t2);
      this.scheduleE(next);
    });
  }

  receive(response: SipResponse): void {
    if (this.state !== 'trying' && this.state !== 'proceeding') return;
    if (response.status < 200) {
      this.state = 'proceeding';
      this.user.onResponse(response);
      return;
    }
    this.state = 'completed';
    this.timers.clearAll();
    this.timers.set('K', this.reliable ? 0 : this.config.t4, () => this.terminate());
    this.user.onResponse(response);
  }

  private transmit(): void {
    this.send(this.request).catch((err: Error) => {
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
