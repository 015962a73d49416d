import type { PricingStore } from '../billing/pricing-store.js';
import type { UpstreamConfig } from '../config/schema.js';
import type { Gateway } from '../gateway.js';
import type { EmbeddedUpstream } from '../sim/smpp/embedded.js';
import type { UpstreamStore } from '../smpp/upstream/upstream-store.js';
import type { UssdMoHandlers } from './ussd-mo-handlers.js';

/**
 * What the SMS module's service (`ctx.use('sms')`, `modules.service('sms')`) gives the core (the daemon's admin wiring,
 * readiness and start line) and the products built on SMS (OTP, USSD), without either importing the SMS product.
 * The SMS product's own service type extends it.
 */
export interface SmsGatewayService {
  /** The message path: SMPP server, SMS service, ledger, queue, dispatcher, upstream pool. */
  gateway: Gateway;
  upstreamStore: UpstreamStore;
  pricing: PricingStore;
  /** The simulated upstream, when it runs (nothing it takes leaves the machine); started by the SMS module's start(). */
  embeddedUpstream: EmbeddedUpstream | null;
  /** Config-file upstreams by id (the admin API reverts runtime overrides to these). */
  configUpstreams: ReadonlyMap<string, UpstreamConfig>;
  /** The country local numbers are read in when the account sets none (sms.defaultCountry); OTP and USSD read numbers with it. */
  defaultCountry: string | null;
  /** Where USSD sessions from upstreams go: products register their handlers here. */
  ussd: UssdMoHandlers;
}
