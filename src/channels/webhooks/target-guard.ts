// The guard moved to the core (src/security/target-guard.ts, every module's `ctx.http`); the webhook names stay.
export { privateTargetsAllowed, TargetGuard, type PinnedAddress, type PrivateTargetsSetting, type TargetCheck } from '../../security/target-guard.js';
