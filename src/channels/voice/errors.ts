import type { ModuleErrors } from '../../http/errors.js';

/**
 * Voice's error codes, merged into the one catalogue at boot. Shapes of requests are the core's VALIDATION_ERROR naming
 * the field; another account's call is the same 404 as one that does not exist; a short balance is the core's
 * INSUFFICIENT_CREDIT. A voice agent's shape is VALIDATION_ERROR too; VOICE_AGENT_INVALID is a rule across its fields
 * (one of llm and relay, tool names unique, a failure transfer to a configured destination…), naming each field.
 */
export const VOICE_ERRORS = {
  CALL_NOT_FOUND: { status: 404, message: 'No such call' },
  CALLER_ID_NOT_ALLOWED: { status: 403, message: 'The account may not call from this number: use a number it owns (GET /v1/numbers)' },
  CALL_ALREADY_ENDED: { status: 409, message: 'The call has already ended' },
  VOICE_NOT_AVAILABLE: { status: 400, message: 'No voice for this locale or voice id on this server' },
  TRUNK_NOT_FOUND: { status: 404, message: 'No such SIP trunk' },
  VOICE_AGENT_NOT_FOUND: { status: 404, message: 'No such voice agent' },
  VOICE_AGENT_INVALID: { status: 400, message: 'The voice agent is not valid; see data.errors for each field' },
  DIALER_NOT_AVAILABLE: { status: 503, message: 'The browser dialer does not run on this instance (it needs the api and media roles and voice.dialer.enabled)' },
} as const satisfies ModuleErrors;

declare module '../../http/errors.js' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  interface ProductErrorCodes extends Record<keyof typeof VOICE_ERRORS, true> {}
}
