import { EventEmitter } from 'node:events';
import type { UpstreamConfig } from '../../config/schema.js';
import { bindClient } from '../client.js';
import { CommandStatus } from '../constants.js';
import type { DeliverSm, Pdu, PduInput } from '../pdu.js';
import { NO_RESPONSE, type BindType, type ResponseFields, type Session } from '../session.js';
import { SmppStateError } from '../errors.js';
import { backoffDelay } from './retry-policy.js';

export type BindState = 'idle' | 'connecting' | 'bound' | 'waiting' | 'closed';

/** Answer to a deliver_sm: a command_status (0 = ESME_ROK) for the deliver_sm_resp. */
export type DeliverHandler = (pdu: DeliverSm, bind: UpstreamBind) => number | Promise<number>;

export interface UpstreamBindOptions {
  config: UpstreamConfig;
  index: number;
  bindType: BindType;
  onDeliver: DeliverHandler;
  /** A bind that stayed up this long resets the backoff; shorter ones keep climbing it (default 30 s). */
  stableAfterMs?: number;
  random?: () => number;
}

export interface UpstreamBindEvents {
  state: [state: BindState, bind: UpstreamBind];
}

export interface BindStatus {
  index: number;
  bindType: BindType;
  state: BindState;
  windowInUse: number;
  windowSize: number;
  connectAttempts: number;
  bindFailures: number;
  drops: number;
  lastError: string | null;
  /** When the next connect attempt is due (state 'waiting'). */
  nextAttemptAt: number | null;
}

/**
 * One SMPP bind to an upstream SMSC, kept bound: on a refusal, a failed connect or a dropped session it waits
 * (exponential backoff with jitter, capped at reconnect.maxMs) and binds again, until close(). Submits go through
 * `request`; deliver_sm (receipts and MO) go to the handler, whose status becomes the deliver_sm_resp.
 */
export class UpstreamBind extends EventEmitter<UpstreamBindEvents> {
  readonly index: number;
  readonly bindType: BindType;
  state: BindState = 'idle';
  session: Session | undefined;
  connectAttempts = 0;
  bindFailures = 0;
  drops = 0;
  lastError: string | null = null;
  nextAttemptAt: number | null = null;

  private readonly config: UpstreamConfig;
  private readonly onDeliver: DeliverHandler;
  private readonly stableAfterMs: number;
  private readonly random: () => number;
  private backoffStep = 0;
  private boundAt = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(options: UpstreamBindOptions) {
    super();
    this.config = options.config;
    this.index = options.index;
    this.bindType = options.bindType;
    this.onDeliver = options.onDeliver;
    this.stableAfterMs = options.stableAfterMs ?? 30_000;
    this.random = options.random ?? Math.random;
  }

  /** Can carry submits (transmitter or transceiver). */
  get transmits(): boolean {
    return this.bindType !== 'receiver';
  }

  get bound(): boolean {
    return this.state === 'bound';
  }

  get windowInUse(): number {
    return this.session?.windowInUse ?? 0;
  }

  get windowSize(): number {
    return this.config.window;
  }

  /** Window slots free now (0 unless bound). */
  get freeSlots(): number {
    const s = this.session;
    if (this.state !== 'bound' || !s || s.queued > 0) return 0;
    return this.config.window - s.windowInUse;
  }

  get hasCapacity(): boolean {
    return this.state === 'bound' && this.session !== undefined && this.session.hasCapacity;
  }

  start(): void {
    if (this.state !== 'idle') return;
    void this.connect();
  }

  /** Sends a request on the bound session. Rejects with the session's errors (timeout, closed, queue full). */
  request(pdu: PduInput): Promise<Pdu> {
    const s = this.session;
    if (this.state !== 'bound' || !s) return Promise.reject(new SmppStateError(`bind ${this.config.id}#${this.index} is ${this.state}`));
    return s.request(pdu);
  }

  /**
   * Stops reconnecting and unbinds. Submits in flight get up to `drainMs` to be answered first; whatever is still
   * outstanding then fails with SessionClosedError, which the upstream reports as a `bind_closed` retry.
   */
  async close(drainMs = 0): Promise<void> {
    if (this.state === 'closed') return;
    this.setState('closed');
    clearTimeout(this.timer);
    this.nextAttemptAt = null;
    const s = this.session;
    if (!s) return;
    const until = Date.now() + drainMs;
    while (!s.closed && s.windowInUse > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
    await s.unbind(Math.min(this.config.responseTimeoutMs, 2000)).catch(() => undefined);
  }

  status(): BindStatus {
    return {
      index: this.index,
      bindType: this.bindType,
      state: this.state,
      windowInUse: this.windowInUse,
      windowSize: this.config.window,
      connectAttempts: this.connectAttempts,
      bindFailures: this.bindFailures,
      drops: this.drops,
      lastError: this.lastError,
      nextAttemptAt: this.nextAttemptAt,
    };
  }

  private async connect(): Promise<void> {
    if (this.state === 'closed') return;
    this.nextAttemptAt = null;
    this.connectAttempts++;
    this.setState('connecting');
    const c = this.config;
    let session: Session;
    try {
      session = await bindClient({
        host: c.host,
        port: c.port,
        tls: c.tls,
        bindType: this.bindType,
        system_id: c.systemId,
        password: c.password,
        system_type: c.systemType,
        windowSize: c.window,
        // A long message may queue its last parts behind its first ones; never more than one window's worth.
        maxQueue: c.window,
        responseTimeoutMs: c.responseTimeoutMs,
        enquireLinkIntervalMs: c.enquireLinkSeconds * 1000,
        connectTimeoutMs: c.responseTimeoutMs,
        onRequest: this.handleRequest,
      });
    } catch (err) {
      this.bindFailures++;
      this.lastError = err instanceof Error ? err.message : String(err);
      this.scheduleReconnect();
      return;
    }
    if (this.isClosed) {
      session.close('local');
      return;
    }
    this.session = session;
    this.boundAt = Date.now();
    this.lastError = null;
    session.once('close', (reason) => {
      if (this.session !== session) return;
      this.session = undefined;
      if (this.state === 'closed') return;
      this.drops++;
      this.lastError = `session closed (${reason})`;
      if (Date.now() - this.boundAt >= this.stableAfterMs) this.backoffStep = 0;
      this.scheduleReconnect();
    });
    // The session may have closed while bindClient resolved; its close event then already fired.
    if (session.closed) {
      this.session = undefined;
      this.drops++;
      this.scheduleReconnect();
      return;
    }
    this.setState('bound');
  }

  // A getter, so TypeScript does not narrow the state across awaits (close() may run meanwhile).
  private get isClosed(): boolean {
    return this.state === 'closed';
  }

  private scheduleReconnect(): void {
    if (this.state === 'closed') return;
    const c = this.config.reconnect;
    const delay = backoffDelay(this.backoffStep++, c.initialMs, c.maxMs, this.random);
    this.nextAttemptAt = Date.now() + delay;
    this.setState('waiting');
    this.timer = setTimeout(() => void this.connect(), delay);
    this.timer.unref();
  }

  private setState(state: BindState): void {
    if (this.state === state) return;
    this.state = state;
    this.emit('state', state, this);
  }

  private readonly handleRequest = (pdu: Pdu): ResponseFields | typeof NO_RESPONSE | Promise<ResponseFields> | undefined => {
    if (pdu.command === 'deliver_sm') {
      let result: number | Promise<number>;
      try {
        result = this.onDeliver(pdu, this);
      } catch {
        return TEMPORARY_ERROR;
      }
      if (typeof result === 'number') return result === 0 ? OK : { command_status: result };
      return result.then(
        (status) => (status === 0 ? OK : { command_status: status }),
        () => TEMPORARY_ERROR,
      );
    }
    if (pdu.command === 'alert_notification') return undefined;
    // data_sm from the SMSC is not used by Ferry's upstreams; say so rather than acknowledge and drop it.
    return { command_status: CommandStatus.ESME_RINVCMDID };
  };
}

const OK: ResponseFields = Object.freeze({}) as ResponseFields;
// The SMSC keeps and redelivers a deliver_sm answered with a temporary error (our handler failed to record it).
const TEMPORARY_ERROR: ResponseFields = Object.freeze({ command_status: CommandStatus.ESME_RX_T_APPN }) as ResponseFields;
