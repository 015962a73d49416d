/** The customer-facing SMPP server: ESMEs bind to Ferry and submit. */
export { CustomerServer, type CustomerServerOptions, type CustomerTlsOptions } from './customer-server.js';
export { BindRegistry, type CustomerBind, type BindRegistryEvents } from './bind-registry.js';
export { CustomerMetrics, type BindFailureReason, type CustomerBindSource } from './customer-metrics.js';
export { CustomerRequests, type CustomerRequestsOptions } from '../../messaging/smpp-ingress/customer-requests.js';
export { IpAllowList, plainAddress } from './ip-allow-list.js';
export { MESSAGE_STATE_OF_STATUS, RECEIPT_STAT_OF_STATUS, messageStateOf } from '../../messaging/smpp-ingress/message-state.js';
export {
  SMS_ERROR_STATUS,
  MAX_SEGMENTS,
  MAX_BINARY_OCTETS,
  MAX_SCHEDULE_AHEAD_MS,
  statusOfSmsError,
  submissionFromPdu,
  isSubmitRefusal,
  type SubmitFields,
  type SubmitContext,
  type SubmitRefusal,
} from '../../messaging/smpp-ingress/submit-sm.js';
