/** The customer-facing SMPP server: ESMEs bind to it; what their requests mean is the caller's (src/messaging/smpp-ingress). */
export { BindServer, type BindServerOptions, type BindChecker, type BindCredentials, type CustomerTlsOptions } from './bind-server.js';
export { BindRegistry, type CustomerBind, type BindRegistryEvents } from './bind-registry.js';
export { CustomerMetrics, type BindFailureReason, type CustomerBindSource } from './customer-metrics.js';
export { IpAllowList, plainAddress } from './ip-allow-list.js';
