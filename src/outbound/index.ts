/** What a product imports to use the outbound pipeline (docs/outbound.md). */
export { backoffDelay, DEFAULT_BACKOFF, jitter, parseRetryAfter, type BackoffPolicy } from '../delivery/retry-policy.js';
export { CircuitBreaker, type BreakerState, type CircuitBreakerOptions } from './circuit-breaker.js';
export { ErrorTable, type ErrorAction, type ErrorRule } from './error-table.js';
export { OutboundPipeline, type OutboundPipelineOptions, type OutboundProduct, type OutboundProvider, type PipelineStats, type StatusUpdate } from './outbound-pipeline.js';
export { OutboundReconciler, type OutboundReconcilerOptions } from './outbound-reconciler.js';
export { StateMachine, type StateDef, type StateMachineSpec } from './state-machine.js';
export type { EnqueuedJob, NewOutboundJob, OutboundJob, ProviderAdapter, SendResult, StateChange, StatusOutcome } from './types.js';
