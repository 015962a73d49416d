import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { AccountService, SmppCredentials } from '../../accounts/account-service.js';
import type { SmsIngress } from '../../channels/sms/types.js';
import type { CooldownPolicy, FailureCooldowns } from '../../store/types.js';
import { CommandStatus, INTERFACE_VERSION_34 } from '../constants.js';
import type { BindPdu } from '../pdu.js';
import { SmppServer } from '../server.js';
import type { BindDecision, BindType, Session } from '../session.js';
import { BindGuard, type BindVerdict as GuardVerdict } from './bind-guard.js';
import { BindRegistry } from './bind-registry.js';
import type { BindFailureReason, CustomerMetrics } from './customer-metrics.js';
import { CustomerRequests } from './customer-requests.js';
import { IpAllowList, plainAddress } from './ip-allow-list.js';

export interface CustomerTlsOptions {
  port: number;
  /** PEM text, or the path of a PEM file. */
  cert: string | Buffer;
  /** PEM text, or the path of a PEM file. */
  key: string | Buffer;
}

export interface CustomerServerOptions {
  host: string;
  /** Plain TCP port (0 picks a free one). */
  port: number;
  /** A second listener serving SMPP over TLS; none when absent or null. */
  tls?: CustomerTlsOptions | null;
  accounts: Pick<AccountService, 'checkSmppBind'>;
  sms: SmsIngress;
  /** Close sessions silent (or unbound) for this long; 0 disables. */
  idleTimeoutMs: number;
  log: Logger;
  metrics?: CustomerMetrics;
  /** Connections per listener beyond which new ones are refused at accept. */
  maxSessions?: number;
  /** Outstanding deliver_sm per session (default 64). */
  windowSize?: number;
  /** Requests one session may have in the SMS service at once; beyond it ESME_RTHROTTLED (default 1000). */
  maxIncoming?: number;
  /** Send enquire_link to a silent customer after this long; 0 disables (default 0: the idle timeout suffices). */
  enquireLinkIntervalMs?: number;
  /** system_id Ferry answers in bind responses (default 'Ferry'). */
  systemId?: string;
  /** Clock for relative SMPP times (default Date.now). */
  now?: () => number;
  /** Failed binds per (address, system_id) and their cool-downs (BindGuard); none when absent. */
  bindGuard?: { cooldowns: FailureCooldowns; policy: CooldownPolicy } | null;
}

// How long close() waits for customers to answer unbind before dropping them.
const UNBIND_TIMEOUT_MS = 1000;

type BindVerdict = GuardVerdict<SmppCredentials>;

const BIND_TYPE_OF: Record<BindPdu['command'], BindType> = {
  bind_transmitter: 'transmitter',
  bind_receiver: 'receiver',
  bind_transceiver: 'transceiver',
};

const REFUSAL_STATUS: Record<BindFailureReason, number> = {
  unknown_system_id: CommandStatus.ESME_RINVSYSID,
  wrong_password: CommandStatus.ESME_RINVPASWD,
  suspended: CommandStatus.ESME_RBINDFAIL,
  ip_not_allowed: CommandStatus.ESME_RBINDFAIL,
  max_binds: CommandStatus.ESME_RBINDFAIL,
  cooling_down: CommandStatus.ESME_RBINDFAIL,
  error: CommandStatus.ESME_RBINDFAIL,
};

function pem(value: string | Buffer): string | Buffer {
  return typeof value === 'string' && !value.includes('-----BEGIN') ? readFileSync(value) : value;
}

/**
 * The SMPP server customers (ESMEs) bind to: a plain listener and optionally a TLS one. Binds are checked against
 * the account's SMPP credentials (password, allowed addresses, concurrent binds per system_id); bound sessions are
 * tracked in `binds` for receipt delivery, and their requests answered by CustomerRequests.
 *
 * Bind refusals: unknown system_id → ESME_RINVSYSID, wrong password → ESME_RINVPASWD, suspended account, address
 * not allowed, too many binds or an (address, system_id) cooling down after failed binds (BindGuard) → ESME_RBINDFAIL.
 */
export class CustomerServer {
  readonly binds = new BindRegistry();
  private readonly listeners: SmppServer[] = [];
  private readonly plain: SmppServer;
  private readonly secure: SmppServer | null;
  private readonly allowLists = new Map<string, IpAllowList>();
  private readonly guard: BindGuard | null;
  private readonly detachMetrics: () => void;
  private closing: Promise<void> | undefined;
  private listening: { plain: AddressInfo; tls: AddressInfo | null } | undefined;

  private constructor(private readonly options: CustomerServerOptions) {
    const requests = new CustomerRequests({ sms: options.sms, binds: this.binds, log: options.log, metrics: options.metrics, now: options.now });
    const sessionOptions = {
      authenticate: (bind: BindPdu, session: Session) => this.authenticate(bind, session),
      onRequest: requests.handle,
      idleTimeoutMs: options.idleTimeoutMs,
      enquireLinkIntervalMs: options.enquireLinkIntervalMs ?? 0,
      windowSize: options.windowSize,
      maxIncoming: options.maxIncoming,
      maxSessions: options.maxSessions,
      systemId: options.systemId,
    };
    this.plain = new SmppServer(sessionOptions);
    this.secure = options.tls ? new SmppServer({ ...sessionOptions, tls: { cert: pem(options.tls.cert), key: pem(options.tls.key) } }) : null;
    for (const s of [this.plain, this.secure]) {
      if (!s) continue;
      this.listeners.push(s);
      s.on('error', (err) => options.log.error({ err }, 'customer SMPP listener error'));
    }
    this.detachMetrics = options.metrics?.addSource(this.binds) ?? (() => {});
    this.guard = options.bindGuard ? new BindGuard({ ...options.bindGuard, log: options.log, metrics: options.metrics }) : null;
  }

  /** Starts listening (plain, then TLS when configured); rejects when a port cannot be bound. */
  static async start(options: CustomerServerOptions): Promise<CustomerServer> {
    const server = new CustomerServer(options);
    try {
      const plain = await server.plain.listen(options.port, options.host);
      const tls = server.secure && options.tls ? await server.secure.listen(options.tls.port, options.host) : null;
      server.listening = { plain, tls };
      options.log.info({ host: options.host, port: plain.port, tlsPort: tls?.port ?? null }, 'customer SMPP server listening');
    } catch (err) {
      await server.close();
      throw err;
    }
    return server;
  }

  /** The bound ports (useful when started on port 0). */
  get ports(): { plain: number; tls: number | null } {
    return { plain: this.plain.port, tls: this.secure ? this.secure.port : null };
  }

  /** The bound addresses of both listeners. */
  get addresses(): { plain: AddressInfo; tls: AddressInfo | null } {
    if (!this.listening) throw new Error('customer SMPP server is not listening');
    return this.listening;
  }

  /** Every open connection, bound or not, on both listeners. */
  get sessionCount(): number {
    return this.listeners.reduce((n, s) => n + s.sessions.size, 0);
  }

  /** Unbinds bound customers (waiting briefly for their unbind_resp), then closes every connection and listener. */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    const bound = this.listeners.flatMap((l) => [...l.sessions]).filter((s) => s.state === 'bound');
    await Promise.all(bound.map((s) => s.unbind(UNBIND_TIMEOUT_MS).catch(() => undefined)));
    await Promise.all(this.listeners.map((l) => l.close().catch(() => undefined)));
    this.detachMetrics();
  }

  private async authenticate(bind: BindPdu, session: Session): Promise<BindDecision> {
    const remote = session.socket.remoteAddress ?? '';
    const bindType = BIND_TYPE_OF[bind.command];
    const refuse = (reason: BindFailureReason, err?: unknown): BindDecision => {
      this.options.metrics?.bindFailed(reason);
      const fields = { systemId: bind.system_id, remote, bindType, reason };
      if (err) this.options.log.error({ ...fields, err }, 'customer bind failed');
      // The cool-down's start is logged once (BindGuard); a guesser's binds during it would flood the log.
      else if (reason === 'cooling_down') this.options.log.debug(fields, 'customer bind refused');
      else this.options.log.warn(fields, 'customer bind refused');
      return { status: REFUSAL_STATUS[reason] };
    };
    if (this.closing) return refuse('error');
    let checked: BindVerdict;
    try {
      const verify = () => this.checkCredentials(bind, remote);
      checked = this.guard ? await this.guard.check(plainAddress(remote), bind.system_id, verify) : await verify();
    } catch (err) {
      return refuse('error', err);
    }
    if (!checked.ok) return refuse(checked.reason);
    const credentials = checked.credentials;
    const admitted = this.binds.admit(
      session,
      { accountId: credentials.accountId, systemId: credentials.systemId, bindType, interfaceVersion: bind.interface_version || INTERFACE_VERSION_34, remoteAddress: plainAddress(remote) },
      credentials.maxBinds,
    );
    if (!admitted) {
      // A session that closed while its password was checked is not worth a warning.
      if (session.closed) return { status: CommandStatus.ESME_RBINDFAIL };
      return refuse('max_binds');
    }
    this.options.log.info({ systemId: credentials.systemId, accountId: credentials.accountId, remote, bindType }, 'customer bound');
    return { status: CommandStatus.ESME_ROK };
  }

  /** Password, account and address: what a guesser could learn from; BindGuard counts its refusals. */
  private async checkCredentials(bind: BindPdu, remote: string): Promise<BindVerdict> {
    // The only password check of the bind: scrypt runs once, off the event loop, and only for an allowed address.
    const checked = await this.options.accounts.checkSmppBind(bind.system_id, bind.password, (allowedIps) => this.allowList(allowedIps).allows(remote));
    if (!checked.ok) return checked;
    return { ok: true, credentials: checked.credentials };
  }

  private allowList(entries: string[] | null): IpAllowList {
    const key = entries ? entries.join(',') : '';
    let list = this.allowLists.get(key);
    if (!list) {
      list = new IpAllowList(entries);
      if (list.invalid.length > 0) this.options.log.warn({ invalid: list.invalid }, 'ignoring SMPP allowed_ips entries that are not addresses or CIDR ranges');
      if (this.allowLists.size >= 1000) this.allowLists.clear(); // a cache, bounded
      this.allowLists.set(key, list);
    }
    return list;
  }
}
