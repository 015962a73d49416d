import { BindServer, type BindServerOptions } from '../../smpp/customer/bind-server.js';
import type { SmsIngress } from '../types.js';
import { CustomerRequests } from './customer-requests.js';

export type { CustomerTlsOptions } from '../../smpp/customer/bind-server.js';

export interface CustomerServerOptions extends Omit<BindServerOptions, 'requests'> {
  /** Where submits, queries and cancels go. */
  sms: SmsIngress;
  /** Clock for relative SMPP times (default Date.now). */
  now?: () => number;
}

/** The SMPP server customers bind to (src/smpp's BindServer), with what they send answered by the SMS service. */
export class CustomerServer extends BindServer {
  private constructor(options: CustomerServerOptions) {
    super({ ...options, requests: (binds) => new CustomerRequests({ sms: options.sms, binds, log: options.log, metrics: options.metrics, now: options.now }).handle });
  }

  /** Starts listening (plain, then TLS when configured); rejects when a port cannot be bound. */
  static async start(options: CustomerServerOptions): Promise<CustomerServer> {
    const server = new CustomerServer(options);
    await server.listen();
    return server;
  }
}
