/** Ferry's upstream side: binds to SMSCs, the pool with failover, receipt correlation, metrics. */
export type * from './outbound.js';
export type { CorrelationStore, CorrelationEntry, CorrelationMatch, CorrelationRef } from './correlation-store.js';
export { UpstreamPool, type UpstreamPoolOptions, type UpstreamPoolEvents } from './upstream-pool.js';
export { Upstream, type UpstreamOptions, type UpstreamStatus } from './upstream.js';
export { UpstreamBind, type BindState, type BindStatus } from './upstream-bind.js';
export { ReceiptCorrelator, type ReceiptCorrelatorOptions } from './receipt-correlator.js';
export { MemoryCorrelationStore } from './memory-correlation-store.js';
export { SqlCorrelationStore } from './sql-correlation-store.js';
export { UpstreamMetrics, UpstreamMetricHandles } from './upstream-metrics.js';
export { correlationKey, receiptLookupKeys, type ReceiptIdFormat } from './receipt-id.js';
export { backoffDelay, retryDelay, RETRY_DELAYS, DEFAULT_TRANSIENT_STATUSES } from './retry-policy.js';
export { submitPdus, concatReference } from './submit-pdus.js';
