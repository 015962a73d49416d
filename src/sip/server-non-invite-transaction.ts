import type { SipRequest, SipResponse } from './message.js';
import { TimerSet, type SipTimerConfig } from './timers.js';
import type { SendFn, TransactionState } from './transaction-types.js';

/** RFC 3261 17.2.2: a retransmitted request gets the last response again; Timer J (64*T1 on UDP) ends it. */
export class ServerNonInviteTransaction {
  state: TransactionState = 'trying';
  private readonly timers = new TimerSet();
  private last: SipResponse | undefined;

  constructor(
    readonly request: SipRequest,
    private readonly send: SendFn,
    private readonly reliable: boolean,
    private readonly config: SipTimerConfig,
    private readonly onTerminated: () => void,
  ) {
    // a request never answered must not pin the transaction forever
    this.timers.set('J', 64 * config.t1 * 2, () => this.terminate());
  }

  respond(response: SipResponse): void {
    if (this.state === 'completed' || this.state === 'terminated') return;
    this.last = response;
    this.send(response).catch(() => undefined);
    if (response.status < 200) {
      this.state = 'proceeding';
      return;
    }
    this.state = 'completed';
    this.timers.set('J', this.reliable ? 0 : 64 * this.config.t1, () => this.terminate());
  }

  receiveRequest(_request: SipRequest): void {
    if (this.last) this.send(this.last).catch(() => undefined);
  }

  terminate(): void {
    if (this.state === 'terminated') return;
    this.state = 'terminated';
    this.timers.clearAll();
    this.onTerminated();
  }
}
