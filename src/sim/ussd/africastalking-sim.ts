/** One screen as Africa's Talking relays it. */
export interface AtScreen {
  text: string;
  end: boolean;
}

let counter = 0;

/**
 * Africa's Talking as Ferry's aggregator: for each hop it POSTs its form (sessionId, serviceCode, phoneNumber,
 * networkCode, text = every input so far joined by *) to the callback URL and reads `CON …`/`END …` in text/plain; a
 * session the phone abandons gets the end-of-session notice (status Incomplete) at the events URL. Used by tests and
 * `ferry ussd dial --callback`.
 */
export class AfricasTalkingSimulator {
  constructor(private readonly o: { callbackUrl: string; eventsUrl?: string; networkCode?: string; timeoutMs?: number }) {}

  /** A new session of `phone` on `serviceCode` (or, with its id and inputs so far, one already under way). */
  session(phone: string, serviceCode: string, sessionId = `ATUid_${process.pid}_${Date.now()}_${++counter}`, inputs: readonly string[] = []): AtSession {
    return new AtSession(this.o, phone, serviceCode, sessionId, inputs);
  }
}

export class AtSession {
  private readonly inputs: string[];
  private hops = 0;
  private ended = false;
  private readonly started = Date.now();
  lastScreen: AtScreen | null = null;

  constructor(
    private readonly o: { callbackUrl: string; eventsUrl?: string; networkCode?: string; timeoutMs?: number },
    readonly phone: string,
    readonly serviceCode: string,
    readonly sessionId: string,
    inputs: readonly string[] = [],
  ) {
    this.inputs = [...inputs];
  }

  /** The first hop (no input) or the next one with `input`. */
  async hop(input?: string): Promise<AtScreen> {
    if (this.ended) throw new Error('the session has ended');
    if (input !== undefined) this.inputs.push(input);
    const res = await fetch(this.o.callbackUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ sessionId: this.sessionId, serviceCode: this.serviceCode, phoneNumber: this.phone, networkCode: this.o.networkCode ?? '62001', text: this.inputs.join('*') }).toString(),
      signal: AbortSignal.timeout(this.o.timeoutMs ?? 10_000),
    });
    const body = await res.text();
    this.hops++;
    if (res.status !== 200) throw new Error(`callback answered HTTP ${res.status}: ${body.slice(0, 200)}`);
    const m = /^(CON|END)[ \n]([\s\S]*)$/.exec(body);
    if (!m) throw new Error(`callback answered neither CON nor END: ${body.slice(0, 200)}`);
    this.lastScreen = { end: m[1] === 'END', text: m[2] };
    if (this.lastScreen.end) await this.notify('Success');
    return this.lastScreen;
  }

  /** The phone walks away: the end-of-session notice with status Incomplete. */
  abandon(): Promise<void> {
    return this.notify('Incomplete');
  }

  private async notify(status: 'Success' | 'Incomplete'): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    if (!this.o.eventsUrl) return;
    await fetch(this.o.eventsUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        sessionId: this.sessionId,
        serviceCode: this.serviceCode,
        phoneNumber: this.phone,
        networkCode: this.o.networkCode ?? '62001',
        status,
        input: this.inputs[this.inputs.length - 1] ?? '',
        durationInMillis: String(Date.now() - this.started),
        hopsCount: String(this.hops),
        date: new Date().toISOString(),
      }).toString(),
      signal: AbortSignal.timeout(this.o.timeoutMs ?? 10_000),
    }).then((r) => r.text());
  }
}
