import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { Logger } from 'pino';
import { ApiError } from '../../../http/errors.js';
import { normalizeNumber } from '../../../numbers/phone.js';
import { formatUri, parseUri, type IncomingCall, type SipParams } from '../../../sip/index.js';
import type { BrowserPhone } from '../browser/browser-phone.js';
import type { DialerLocation, DialerPresence } from '../browser/dialer-presence.js';
import type { Dialer } from '../dialer.js';
import type { Trunk, TrunkRegistry } from '../trunk-registry.js';
import type { VoiceService } from '../voice-service.js';
import type { NumberRouteStore } from './number-route-store.js';

/** How long a trunk's name is taken to resolve to the addresses last looked up. */
const TRUNK_ADDRESS_TTL_MS = 60_000;
/**
 * The Request-URI parameter of Ferry's redirects (`sip:NUMBER@HOST:PORT;ferry-hop=1`): an INVITE carrying it was sent
 * here by another instance, and is answered here or refused, never redirected again (no loops).
 */
export const DIALER_HOP_PARAM = 'ferry-hop';

export interface InboundCallsOptions {
  trunks: TrunkRegistry;
  routes: NumberRouteStore;
  voice: VoiceService;
  dialer: Dialer;
  /** The browser dialer on this instance (numbers routed to a dialer identity ring its browsers). */
  browsers: () => BrowserPhone | null;
  /** Where browsers registered with other instances are (Redis); null with one instance. */
  presence: DialerPresence | null;
  log: Logger;
  /** How long the call row is held for this instance before it answers (the owner lease). */
  claimMs: number;
}

/**
 * Calls coming in from the SIP trunks: an INVITE from a configured trunk's address to one of an account's numbers
 * routed to an agent (PUT /v1/voice/numbers/{number}) is stored as an inbound call of that account and answered by
 * the agent on this instance; anything else is refused with a SIP status that says why (403 from a stranger, 404 for
 * a number no agent answers, 486 at the account's limit, 402 when its balance cannot cover the first increment).
 */
export class InboundCalls {
  private readonly addresses = new Map<string, { at: number; addresses: Set<string> }>();

  constructor(private readonly o: InboundCallsOptions) {}

  async answer(incoming: IncomingCall): Promise<void> {
    try {
      if (incoming.source.flow !== undefined) return incoming.reject(403, 'Forbidden: browsers call through the dialer');
      await this.o.dialer.ready();
      const trunk = await this.trunkOf(incoming.source.host);
      if (!trunk) return incoming.reject(403, 'Forbidden: not a configured trunk');
      const called = calledNumber(incoming);
      const route = called ? await this.o.routes.resolve(called) : null;
      if (!called || !route) return incoming.reject(404, 'Not Found: no agent answers this number');
      const caller = (incoming.from.uri ? safeUser(incoming.from.uri) : undefined) ?? '';
      if ('dialerIdentity' in route) {
        const browsers = this.o.browsers();
        if (!browsers?.hasRegistration(route.accountId, route.dialerIdentity)) {
          const elsewhere = hopped(incoming) ? null : await this.o.presence?.find(route.accountId, route.dialerIdentity);
          if (elsewhere) {
            this.o.log.debug({ identity: route.dialerIdentity, instance: elsewhere.instanceId }, 'voice: a call for the dialer redirected to the instance its browser is on');
            return incoming.redirect(redirectContact(incoming, elsewhere));
          }
          if (!browsers) return incoming.reject(480, 'Temporarily Unavailable: the browser dialer does not run here');
        }
        incoming.ring(180);
        return await browsers!.receive(incoming, trunk, { accountId: route.accountId, identity: route.dialerIdentity, to: called, from: caller });
      }
      incoming.ring(180);
      const call = await this.o.voice.receive(route.accountId, { to: '+' + called, from: caller, agentId: route.agentId }, this.o.claimMs);
      await this.o.dialer.answerInbound(call, incoming, trunk);
    } catch (err) {
      if (err instanceof ApiError && err.code === 'INSUFFICIENT_CREDIT') return incoming.reject(402, 'Payment Required');
      if (err instanceof ApiError && err.code === 'VOICE_AGENT_NOT_FOUND') return incoming.reject(404, 'Not Found: no agent answers this number');
      this.o.log.error({ err }, 'voice: an inbound call could not be answered');
      incoming.reject(500, 'Server Internal Error');
    }
  }

  /** The configured trunk a request came from, by its address (a trunk's name resolved, at most a minute old). */
  private async trunkOf(address: string): Promise<Trunk | null> {
    for (const trunk of this.o.trunks.list()) {
      if (trunk.host === address) return trunk;
      if (isIP(trunk.host)) continue;
      let known = this.addresses.get(trunk.host);
      if (!known || Date.now() - known.at > TRUNK_ADDRESS_TTL_MS) {
        const found = await lookup(trunk.host, { all: true }).catch(() => []);
        known = { at: Date.now(), addresses: new Set(found.map((a) => a.address)) };
        this.addresses.set(trunk.host, known);
      }
      if (known.addresses.has(address)) return trunk;
    }
    return null;
  }
}

/** Whether another instance sent this INVITE here (its Request-URI carries the hop marker). */
function hopped(incoming: IncomingCall): boolean {
  try {
    return parseUri(incoming.request.uri).params[DIALER_HOP_PARAM] !== undefined;
  } catch {
    return false;
  }
}

/** The Contact of a redirect to another instance: the number as it was called, that instance's SIP address, the hop marker. */
function redirectContact(incoming: IncomingCall, to: DialerLocation): string {
  const user = safeUser(incoming.request.uri) ?? safeUser(incoming.to.uri);
  // The caller came over TCP: it is asked to use TCP again (UDP is every SIP address's default).
  const params: SipParams = incoming.source.transport === 'tcp' ? { transport: 'tcp', [DIALER_HOP_PARAM]: '1' } : { [DIALER_HOP_PARAM]: '1' };
  return formatUri({ scheme: 'sip', user, host: to.host, port: to.port, params, headers: {} });
}

function safeUser(uri: string): string | undefined {
  try {
    return parseUri(uri).user;
  } catch {
    return undefined;
  }
}

/** The called number in international digits, from the Request-URI (or the To header), e.g. `sip:+233…@host`. */
function calledNumber(incoming: IncomingCall): string | null {
  const user = safeUser(incoming.request.uri) ?? safeUser(incoming.to.uri);
  if (!user) return null;
  // A short code or a national test number the account owns is routed as its digits.
  return normalizeNumber(user, { international: true }) ?? (/^\+?[0-9]{3,15}$/.test(user) ? user.replace(/^\+/, '') : null);
}
