/** SMS over SMPP: what a customer's submit_sm, submit_multi, query_sm and cancel_sm mean to the SMS service. */
export { CustomerServer, type CustomerServerOptions, type CustomerTlsOptions } from './customer-server.js';
export { CustomerRequests, type CustomerRequestsOptions } from './customer-requests.js';
export { MESSAGE_STATE_OF_STATUS, RECEIPT_STAT_OF_STATUS, messageStateOf } from './message-state.js';
export { ledgerMessageId, smppMessageId } from './smpp-message-id.js';
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
} from './submit-sm.js';
