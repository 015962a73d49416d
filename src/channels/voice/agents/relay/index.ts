export { RelayBrain, relayTargetCheck, type RelayBrainOptions, type RelayFrameCounts, type RelayTarget, type RelayTargetCheck } from './relay-brain.js';
export { RelayError, type RelayErrorCode } from './relay-errors.js';
export * from './relay-protocol.js';
export {
  RELAY_SIGNATURE_HEADER,
  RELAY_SIGNATURE_TOLERANCE_SECONDS,
  RELAY_TIMESTAMP_HEADER,
  relaySignature,
  signedUrlOf,
  verifyRelaySignature,
  type RelaySignatureCheck,
} from './relay-signature.js';
