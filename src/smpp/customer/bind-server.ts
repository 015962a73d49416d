import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { hashPassword, verifyPassword } from '../../security/secrets.js';
import type { CooldownPolicy, FailureCooldowns } from '../../store/types.js';
import { CommandStatus, INTERFACE_VERSION_34 } from '../constants.js';
import type { BindPdu } from '../pdu.js';
import { SmppServer } from '../server.js';
import type { BindDecision, BindType, RequestHandler, Session } from '../session.js';
import { BindGuard, type BindVerdict as GuardVerdict } from './bind-guard.js';
import { BindRegistry } from './bind-registry.js';
import type { BindFailureReason, CustomerMetrics } from './customer-metrics.js';
import { IpAllowList, plainAddress } from './ip-allow-list.js';

export interface CustomerTlsOptions {
  port: number;
  /** PEM text, or the path of a PEM file. */
  cert: string | Buffer;
  /** PEM text, or the path of a PEM file. */
  key: string | Buffer;
}

/** A bind's SMPP credentials as the account store has them. */
export interface BindCredentials {
  systemId: string;
  accountId: string;
  maxBinds: number;
}

/** Checks a bind's system_id and password (and, through `addressAllowed`, the account's allowed addresses). */
export interface BindChecker {
  checkSmppBind(
    systemId: string,
    password: string,
    addressAllowed: (allowedIps: string[] | null) => boolean,
  ): Promise<{ ok: true; credentials: BindCredentials } | { ok: false; reason: 'unknown_system_id' | 'wrong_password' | 'suspended' | 'ip_not_allowed' }>;
}

export interface BindServerOptions {
  host: string;
  /** Plain TCP port (0 picks a free one). */
  port: number;
  /** A second listener serving SMPP over TLS; none when absent or null. */
  tls?: CustomerTlsOptions | null;
  accounts: BindChecker;
  /** Answers what a bound customer sends besides binds and keep-alives; given the server's bind registry. */
  requests: (binds: BindRegistry) => RequestHandler;
  /** Close sessions silent (or unbound) for this long; 0 disables. */
  idleTimeoutMs: number;
  log: Logger;
  metrics?: CustomerMetrics;
  /** Connections per listener beyond which new ones are refused at accept. */
  maxSessions?: number;
  /** Open connections from one address (both listeners, bound or not) beyond which new ones are closed at accept (default unlimited). */
  maxSessionsPerAddress?: number;
  /** A connection not bound this long after it opened is closed; 0 disables (default 0: only the idle timeout). */
  bindTimeoutMs?: number;
  /** Outstanding deliver_sm per session (default 64). */
  windowSize?: number;
  /** Requests one session may have in the SMS service at once; beyond it ESME_RTHROTTLED (default 1000). */
  maxIncoming?: number;
  /** Send enquire_link to a silent customer after this long; 0 disables (default 0: the idle timeout suffices). */
  enquireLinkIntervalMs?: number;
  /** system_id Ferry answers in bind responses (default 'Ferry'). */
  systemId?: string;
  /** Failed binds per (address, system_id), and per address when addressPolicy is set, and their cool-downs (BindGuard); none when absent. */
  bindGuard?: { cooldowns: FailureCooldowns; policy: CooldownPolicy; addressPolicy?: CooldownPolicy | null } | null;
}

// How long close() waits for customers to answer unbind before dropping them.
const UNBIND_TIMEOUT_MS = 1000;

type BindVerdict = GuardVerdict<BindCredentials>;

const BIND_TYPE_OF: Record<BindPdu['command'], BindType> = {
  bind_transmitter: 'transmitter',
  bind_receiver: 'receiver',
  bind_transceiver: 'transceiver',
};

// A bind still being checked when the bind timeout strikes gets this much longer (its check is queued or running).
const BIND_TIMEOUT_RECHECK_MS = 1000;

// Refusals that checked no password: a scrypt against a dummy hash makes them cost (and take) what a wrong password does.
const UNCHECKED: ReadonlySet<BindFailureReason> = new Set(['unknown_system_id', 'ip_not_allowed']);
let dummyHash: Promise<string> | undefined;
function dummyPasswordHash(): Promise<string> {
  dummyHash ??= hashPassword(randomBytes(12).toString('base64'));
  return dummyHash;
}

function pem(value: string | Buffer): string | Buffer {
  return typeof value === 'string' && !value.includes('-----BEGIN') ? readFileSync(value) : value;
}

/**
 * The SMPP server customers (ESMEs) bind to: a plain listener and optionally a TLS one. Binds are checked against
 * the account's SMPP credentials (password, allowed addresses, concurrent binds per system_id); bound sessions are
 * tracked in `binds` for receipt delivery, and their requests answered by the handler `requests` builds (the SMS
 * ingress, src/messaging/smpp-ingress: this library knows the protocol, not what a submit means).
 *
 * Every bind refusal is ESME_RBINDFAIL: unknown system_id, wrong password, suspended account, address not allowed,
 * too many binds, an (address, system_id) cooling down or an address over its budget (BindGuard). An unknown system_id
 * or a refused address costs a scrypt against a dummy hash, so neither the answer nor its delay tells which system_ids
 * exist; the real reason is logged and counted here only.
 *
 * Before a bind: one address holds at most `maxSessionsPerAddress` connections (more are closed at accept), and a
 * connection not bound within `bindTimeoutMs` is closed, so no address can sit on the listener's `maxSessions`.
 */
export class BindServer {
  readonly binds = new BindRegistry();
  private readonly listeners: SmppServer[] = [];
  private readonly plain: SmppServer;
  private readonly secure: SmppServer | null;
  private readonly allowLists = new Map<string, IpAllowList>();
  private readonly guard: BindGuard | null;
  private readonly connectionsByAddress = new Map<string, number>();
  private readonly detachMetrics: () => void;
  private closing: Promise<void> | undefined;
  private listening: { plain: AddressInfo; tls: AddressInfo | null } | undefined;

  constructor(private readonly options: BindServerOptions) {
    const sessionOptions = {
      authenticate: (bind: BindPdu, session: Session) => this.authenticate(bind, session),
      onRequest: options.requests(this.binds),
      idleTimeoutMs: options.idleTimeoutMs,
      enquireLinkIntervalMs: options.enquireLinkIntervalMs ?? 0,
      windowSize: options.windowSize,
      maxIncoming: options.maxIncoming,
      maxSessions: options.maxSessions,
      systemId: options.systemId,
      onSession: (session: Session) => this.onSession(session),
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

  /** Starts listening (plain, then TLS when configured); rejects, closed, when a port cannot be bound. */
  async listen(): Promise<void> {
    const { options } = this;
    // Hashed now, so the first unknown system_id does not cost two scrypts.
    await dummyPasswordHash();
    try {
      const plain = await this.plain.listen(options.port, options.host);
      const tls = this.secure && options.tls ? await this.secure.listen(options.tls.port, options.host) : null;
      this.listening = { plain, tls };
      options.log.info({ host: options.host, port: plain.port, tlsPort: tls?.port ?? null }, 'customer SMPP server listening');
    } catch (err) {
      await this.close();
      throw err;
    }
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

  /** Caps the address's connections and starts the bind timer; runs at accept, before any PDU is read. */
  private onSession(session: Session): void {
    const address = plainAddress(session.socket.remoteAddress ?? '');
    const open = (this.connectionsByAddress.get(address) ?? 0) + 1;
    const cap = this.options.maxSessionsPerAddress;
    if (cap !== undefined && open > cap) {
      this.options.metrics?.connectionClosed('address_cap');
      // Debug: an address hammering the listener would otherwise flood the log; the metric counts it.
      this.options.log.debug({ remote: address, open: open - 1, cap }, 'customer connection refused: too many from this address');
      session.close('local');
      session.socket.destroy();
      return;
    }
    this.connectionsByAddress.set(address, open);
    session.once('close', () => {
      const left = (this.connectionsByAddress.get(address) ?? 1) - 1;
      if (left > 0) this.connectionsByAddress.set(address, left);
      else this.connectionsByAddress.delete(address);
    });
    const timeoutMs = this.options.bindTimeoutMs ?? 0;
    if (timeoutMs <= 0) return;
    let timer: NodeJS.Timeout;
    const expire = (): void => {
      if (session.state === 'bound' || session.closed) return;
      if (session.state === 'binding') {
        timer = setTimeout(expire, BIND_TIMEOUT_RECHECK_MS).unref();
        return;
      }
      this.options.metrics?.connectionClosed('bind_timeout');
      this.options.log.debug({ remote: address, timeoutMs }, 'customer connection closed: no bind in time');
      session.close('idle_timeout');
    };
    timer = setTimeout(expire, timeoutMs).unref();
    const stop = (): void => clearTimeout(timer);
    session.once('bound', stop);
    session.once('close', stop);
  }

  /** Open connections from each address (both listeners, bound or not). */
  connectionsFrom(address: string): number {
    return this.connectionsByAddress.get(plainAddress(address)) ?? 0;
  }

  private async authenticate(bind: BindPdu, session: Session): Promise<BindDecision> {
    const remote = session.socket.remoteAddress ?? '';
    const bindType = BIND_TYPE_OF[bind.command];
    const refuse = (reason: BindFailureReason, err?: unknown): BindDecision => {
      this.options.metrics?.bindFailed(reason);
      const fields = { systemId: bind.system_id, remote, bindType, reason };
      if (err) this.options.log.error({ ...fields, err }, 'customer bind failed');
      // The cool-down's start is logged once (BindGuard); a guesser's binds during it would flood the log.
      else if (reason === 'cooling_down' || reason === 'over_budget') this.options.log.debug(fields, 'customer bind refused');
      else this.options.log.warn(fields, 'customer bind refused');
      return { status: CommandStatus.ESME_RBINDFAIL };
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
    // One scrypt per bind, off the event loop: the account's hash, or the dummy one when there is none to check.
    const checked = await this.options.accounts.checkSmppBind(bind.system_id, bind.password, (allowedIps) => this.allowList(allowedIps).allows(remote));
    if (!checked.ok) {
      if (UNCHECKED.has(checked.reason)) await verifyPassword(bind.password, await dummyPasswordHash());
      return checked;
    }
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
