import { createSocket, type Socket } from 'node:dgram';
import type http from 'node:http';
import { isIP } from 'node:net';
import type { Logger } from 'pino';
import { ApiError } from '../../../http/errors.js';
import { PortPool } from '../../../rtp/port-pool.js';
import { parseNameAddr, parseUri, type IncomingCall, type IncomingRequest, type SipTarget, type UserAgent } from '../../../sip/index.js';
import { WebRtcLeg, WebRtcNegotiationError, type IceServer } from '../../../webrtc/index.js';
import type { Dialer } from '../dialer.js';
import type { VoiceService } from '../voice-service.js';
import { readAnswer } from '../sdp.js';
import type { Trunk } from '../trunk-registry.js';
import { BrowserCall, CALL_ID_HEADER } from './browser-call.js';
import { BrowserCallee } from './browser-callee.js';
import type { DialerPresence } from './dialer-presence.js';
import type { DialerClaims, DialerTokens } from './dialer-token.js';

/** Where browsers connect for SIP over WebSocket (RFC 7118), with `?token=` a dialer token. */
export const DIALER_SIP_PATH = '/v1/voice/dialer/sip';
/** A browser's registration lasts at most this long (it refreshes before). */
const MAX_REGISTRATION_SECONDS = 600;
/** A call to an identity rings at most this many of its browsers (the latest signed in): each takes a port pair. */
const MAX_RINGING_BROWSERS = 8;

export interface BrowserPhoneOptions {
  ua: UserAgent;
  tokens: DialerTokens;
  voice: VoiceService;
  dialer: Dialer;
  log: Logger;
  /** The address the browsers' WebRTC legs gather on (what browsers can reach). */
  webrtcHost: string;
  iceServers: IceServer[];
  /** Ports of the browsers' calls: each takes two pairs, one for its WebRTC leg and one for its trunk side (RTP and RTCP). */
  portRange: { min: number; max: number };
  /** The address the trunk-side sockets bind (Ferry's SIP address). */
  trunkHost: string;
  /** How long a browser's call row is held for this instance before it is dialled (the owner lease). */
  claimMs: number;
  /** Where registrations are told to the other instances (Redis); null with one instance. */
  presence: DialerPresence | null;
}

/** A browser's registration: where to reach it, until when. */
interface Binding {
  target: SipTarget;
  contact: string;
  accountId: string;
  /** When the registration lapses unless the browser refreshes it (ms since the epoch). */
  expiresAt: number;
}

/**
 * The browser dialer's telephone exchange on an instance running the media role: browsers connect over WebSocket with
 * a dialer token, register (the registration is kept with the connection), and place calls that this instance
 * carries: the browser's WebRTC leg is terminated here and relayed to a trunk call that is an ordinary voice call
 * (limits, billing, events, GET /v1/voice/calls). A call is refused with a SIP status that says why.
 */
export class BrowserPhone {
  private readonly claimsOf = new WeakMap<http.IncomingMessage, DialerClaims>();
  private readonly flows = new Map<string, DialerClaims>();
  /** Registered browsers: identity → their connections (flow id → where to reach it), latest last. */
  private readonly registered = new Map<string, Map<string, Binding>>();
  private readonly ports: PortPool;
  readonly calls = new Set<BrowserCall | BrowserCallee>();
  /** Presence updates for browsers whose connection closed, while they run. */
  private readonly departures = new Set<Promise<unknown>>();

  constructor(private readonly o: BrowserPhoneOptions) {
    this.ports = new PortPool(o.portRange);
    const ws = o.ua.webSocket;
    ws.on('flowOpened', (flow, request) => {
      const claims = this.claimsOf.get(request);
      if (claims && flow.flow !== undefined) this.flows.set(flow.flow, claims);
    });
    ws.on('flowClosed', (flow) => {
      if (flow.flow === undefined) return;
      const claims = this.flows.get(flow.flow);
      this.flows.delete(flow.flow);
      const binding = claims ? this.registered.get(claims.identity)?.get(flow.flow) : undefined;
      if (!claims || !binding) return;
      this.registered.get(claims.identity)!.delete(flow.flow);
      const published = this.publish(binding.accountId, claims.identity).catch((err: unknown) => this.o.log.warn({ err }, 'voice: could not update the dialer presence'));
      this.departures.add(published);
      void published.finally(() => this.departures.delete(published));
    });
    o.ua.onRequest('REGISTER', (r) => this.register(r));
  }

  /** Serves browsers on the API's HTTP server; a handshake without a valid dialer token is refused (403). */
  attach(server: http.Server): void {
    this.o.ua.webSocket.attach(server, {
      path: DIALER_SIP_PATH,
      verify: async (request) => {
        const token = new URL(request.url ?? '/', 'http://dialer.invalid').searchParams.get('token');
        const claims = await this.o.tokens.verify(token);
        if (!claims) return false;
        this.claimsOf.set(request, claims);
        return true;
      },
    });
  }

  /**
   * Port pairs for one browser call: its trunk side's, and one per WebRTC leg (up to `legs`, as many as the range has
   * free); null when the range has not the trunk side's and one leg's.
   */
  private takePorts(legs: number): { trunkPort: number; legPorts: number[]; release: () => void } | null {
    const trunkPort = this.ports.acquire();
    const legPorts: number[] = [];
    for (let i = 0; trunkPort !== undefined && i < legs; i++) {
      const port = this.ports.acquire();
      if (port === undefined) break;
      legPorts.push(port);
    }
    const release = () => {
      if (trunkPort !== undefined) this.ports.release(trunkPort);
      for (const port of legPorts) this.ports.release(port);
    };
    if (trunkPort === undefined || !legPorts.length) {
      release();
      return null;
    }
    return { trunkPort, legPorts, release };
  }

  /** How many browsers are registered under `identity` (for tests and the page's status). */
  registrations(identity: string): number {
    return this.registered.get(identity)?.size ?? 0;
  }

  /** The live registrations of the account's identity here, latest last. */
  private bindings(accountId: string, identity: string): Binding[] {
    const now = Date.now();
    return [...(this.registered.get(identity)?.entries() ?? [])]
      .filter(([flow, b]) => b.accountId === accountId && b.expiresAt > now && (this.flows.get(flow)?.expiresAt.getTime() ?? 0) > now)
      .map(([, b]) => b);
  }

  /** Whether a browser of the account is registered here under `identity` (a call for it rings here). */
  hasRegistration(accountId: string, identity: string): boolean {
    return this.bindings(accountId, identity).length > 0;
  }

  /**
   * Tells the other instances what is left here of the identity after a browser left: nothing (the presence goes,
   * unless another instance's newer registration replaced it), or the registration that remains, for its lifetime.
   */
  private async publish(accountId: string, identity: string): Promise<void> {
    if (!this.o.presence) return;
    const now = Date.now();
    const keepMs = Math.max(0, ...this.bindings(accountId, identity).map((b) => b.expiresAt - now));
    await this.o.presence.release(accountId, identity, keepMs);
  }

  /** Resolves once the presence updates of browsers that left so far are done (the other instances see them). */
  async departed(): Promise<void> {
    await Promise.all([...this.departures]);
  }

  /** Every identity registered here, per account (what a stopping instance lets go). */
  held(): Array<{ accountId: string; identity: string }> {
    const out = new Map<string, { accountId: string; identity: string }>();
    for (const [identity, flows] of this.registered) for (const b of flows.values()) out.set(`${b.accountId}\u0000${identity}`, { accountId: b.accountId, identity });
    return [...out.values()];
  }

  /** The claims of a connection whose token is still valid; null for a stranger or an expired token. */
  private claimsFor(source: SipTarget): DialerClaims | null {
    const claims = source.flow === undefined ? undefined : this.flows.get(source.flow);
    if (!claims || claims.expiresAt.getTime() <= Date.now()) return null;
    return claims;
  }

  private async register(r: IncomingRequest): Promise<void> {
    const claims = this.claimsFor(r.source);
    if (!claims) return r.respond(403, { reason: 'Dialer token missing or expired' });
    const contact = r.request.headers.get('contact') ?? '';
    const asked = /;\s*expires=(\d+)/i.exec(contact)?.[1] ?? r.request.headers.get('expires') ?? String(MAX_REGISTRATION_SECONDS);
    const expires = Math.min(Number(asked) || 0, MAX_REGISTRATION_SECONDS);
    const flows = this.registered.get(claims.identity) ?? new Map<string, Binding>();
    const uri = contact ? parseNameAddr(contact).uri : '';
    flows.delete(r.source.flow!);
    // A registration outlives neither its token nor its Expires.
    const lifetimeMs = Math.min(expires * 1000, claims.expiresAt.getTime() - Date.now());
    const registering = expires > 0 && uri !== '' && lifetimeMs > 0;
    if (registering) flows.set(r.source.flow!, { target: r.source, contact: uri, accountId: claims.accountId, expiresAt: Date.now() + lifetimeMs });
    this.registered.set(claims.identity, flows);
    // Told before the 200, so a call for the identity reaching another instance right after finds it.
    if (registering) await this.o.presence?.claim(claims.accountId, claims.identity, lifetimeMs);
    // Not registering, or the connection closed while the claim was written (its release may have gone first).
    if (!registering || !flows.has(r.source.flow!)) await this.publish(claims.accountId, claims.identity);
    const headers: Array<[string, string]> = uri && expires > 0 ? [['Contact', `<${uri}>;expires=${expires}`]] : [];
    r.respond(200, { headers: [...headers, ['Expires', String(expires)]] });
  }

  /** An INVITE over a browser's connection: the person calls a number. */
  async invite(incoming: IncomingCall): Promise<void> {
    const claims = this.claimsFor(incoming.source);
    if (!claims) return incoming.reject(403, 'Dialer token missing or expired');
    let user: string | undefined;
    try {
      user = parseUri(incoming.request.uri).user;
    } catch {
      user = undefined;
    }
    if (!user || !/^\+?[0-9]{3,15}$/.test(user)) return incoming.reject(484, 'Address Incomplete: dial a number in E.164');
    const ports = this.takePorts(1);
    if (!ports) return incoming.reject(503, 'No media port free');
    const { trunkPort, release } = ports;
    const [port] = ports.legPorts;
    let leg: WebRtcLeg | null = null;
    let socket: Socket | null = null;
    try {
      const answered = await WebRtcLeg.answer(incoming.sdp, { host: this.o.webrtcHost, iceServers: this.o.iceServers, portRange: { min: port, max: port + 1 } });
      leg = answered.leg;
      socket = await bindUdp(this.o.trunkHost, trunkPort);
      const browser = new BrowserCall(incoming, leg, answered.answerSdp, socket, release);
      this.calls.add(browser);
      void this.carry(claims, user, browser).finally(() => this.calls.delete(browser));
    } catch (err) {
      await leg?.close().catch(() => undefined);
      socket?.close();
      release();
      if (err instanceof WebRtcNegotiationError) return incoming.reject(488, 'Not Acceptable Here: offer G.711 (PCMU or PCMA)');
      this.o.log.error({ err }, 'voice: a browser call could not be set up');
      return incoming.reject(500, 'Server Internal Error');
    }
  }

  /**
   * A call from a trunk to a number routed to `identity`: rings every browser of the account signed in under it here
   * (the latest `MAX_RINGING_BROWSERS`, each with a WebRTC offer of its own made here, G.711 only, the codec the caller
   * offered); the first to answer takes the call, the others are cancelled, and the caller's call is answered and
   * relayed to it. Nobody signed in: 480.
   */
  async receive(incoming: IncomingCall, trunk: Trunk, o: { accountId: string; identity: string; to: string; from: string }): Promise<void> {
    const bindings = this.bindings(o.accountId, o.identity).slice(-MAX_RINGING_BROWSERS).reverse();
    if (!bindings.length) return incoming.reject(480, `Temporarily Unavailable: nobody is signed in to the dialer as ${o.identity}`);
    const offer = readAnswer(incoming.sdp);
    if (!offer.ok) return incoming.reject(488, 'Not Acceptable Here');
    // One leg per browser rung, as many as the range has free (the latest signed in first).
    const ports = this.takePorts(bindings.length);
    if (!ports) return incoming.reject(503, 'No media port free');
    const { trunkPort, legPorts, release } = ports;
    const legs: WebRtcLeg[] = [];
    let socket: Socket | null = null;
    let callee: BrowserCallee | null = null;
    try {
      // Settled, not all: a leg made while another failed is still closed below.
      const made = await Promise.allSettled(legPorts.map((port) => WebRtcLeg.offer({ host: this.o.webrtcHost, iceServers: this.o.iceServers, portRange: { min: port, max: port + 1 }, codecs: [offer.codec] })));
      const offers = made.flatMap((m) => (m.status === 'fulfilled' ? [m.value] : []));
      legs.push(...offers.map((m) => m.leg));
      const failed = made.find((m): m is PromiseRejectedResult => m.status === 'rejected');
      if (failed) throw failed.reason;
      socket = await bindUdp(this.o.trunkHost, trunkPort);
      const call = await this.o.voice.receive(o.accountId, { to: '+' + o.to, from: o.from, dialerIdentity: o.identity }, this.o.claimMs);
      const caller = o.from ? `+${o.from.replace(/^\+/, '')}` : 'anonymous';
      const branches = offers.map((offered, i) => ({
        leg: offered.leg,
        invite: this.o.ua.invite({
          target: bindings[i].target,
          requestUri: bindings[i].contact,
          from: `<sip:${caller}@dialer.invalid>`,
          to: `<sip:${o.identity}@dialer.invalid>`,
          sdp: offered.offerSdp,
          headers: [[CALL_ID_HEADER, call.id]],
        }),
      }));
      callee = new BrowserCallee(branches, socket, release);
      this.calls.add(callee);
      const session = await this.o.dialer.answerInbound(call, incoming, trunk, callee);
      if (session) await session.done;
    } catch (err) {
      if (err instanceof ApiError && err.code === 'INSUFFICIENT_CREDIT') incoming.reject(402, 'Payment Required');
      else {
        this.o.log.error({ err }, 'voice: a call to the browser dialer failed');
        incoming.reject(500, 'Server Internal Error');
      }
    } finally {
      if (callee) {
        await callee.close();
        this.calls.delete(callee);
      } else {
        for (const leg of legs) await leg.close().catch(() => undefined);
        socket?.close();
        release();
      }
    }
  }

  private async carry(claims: DialerClaims, to: string, browser: BrowserCall): Promise<void> {
    try {
      const call = await this.o.voice.place(
        claims.accountId,
        { to: to.startsWith('+') ? to : `+${to}`, from: `+${claims.from}`, reference: `dialer:${claims.identity}` },
        { browser: { claimMs: this.o.claimMs } },
      );
      const session = await this.o.dialer.placeFromBrowser(call, browser);
      if (session) {
        browser.carriedBy(session, call.id);
        await session.done;
        return;
      }
      browser.finish(await this.o.voice.get(claims.accountId, call.id));
    } catch (err) {
      if (err instanceof ApiError) browser.finish(refusal(err));
      else {
        this.o.log.error({ err }, 'voice: a browser call failed before dialling');
        browser.finish({ status: 'failed', sipCode: 500, sipReason: 'Server Internal Error', errorCode: 'INTERNAL', errorReason: 'the call failed inside Ferry' });
      }
    } finally {
      await browser.close();
    }
  }
}

/** An API refusal of the call, as the browser hears it. */
function refusal(err: ApiError): { status: 'failed'; sipCode: number; sipReason: string; errorCode: string; errorReason: string } {
  const sip: Record<string, [number, string]> = {
    INSUFFICIENT_CREDIT: [402, 'Payment Required: the balance does not cover this call'],
    CALLER_ID_NOT_ALLOWED: [403, 'Forbidden: the caller ID is not a number of the account'],
    VALIDATION_ERROR: [484, 'Address Incomplete'],
  };
  const [code, reason] = sip[err.code] ?? [err.status >= 500 ? 503 : 403, err.message];
  return { status: 'failed', sipCode: code, sipReason: reason, errorCode: err.code, errorReason: reason };
}

function bindUdp(host: string, port: number): Promise<Socket> {
  const socket = createSocket(isIP(host) === 6 ? 'udp6' : 'udp4');
  return new Promise((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(port, host, () => {
      socket.off('error', reject);
      socket.on('error', () => undefined);
      resolve(socket);
    });
  });
}
