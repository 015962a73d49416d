import type { RateTable } from './rate-policy.js';

/**
 * The messenger's rate limits (spec §8, "Messenger rate limits"), per account and endpoint; a limit the spec does
 * not give is not set. The spec does not say whose limits they are: Ferry counts them per account, so every key of
 * an account shares them. Actions are named after the endpoints.
 */
export const MESSENGER_RATE_LIMITS = {
  /** POST /send */
  'messenger.send': [{ per: 'endpoint', second: 80, minute: 3000, day: 100_000 }],
  /** GET /status */
  'messenger.status': [{ per: 'endpoint', second: 200, minute: 5000 }],
  /** POST /resend */
  'messenger.resend': [{ per: 'endpoint', second: 20, minute: 500 }],
  /** GET /numbers/check */
  'messenger.numbers.check': [{ per: 'endpoint', minute: 300, day: 50_000 }],
  /** POST /templates: 100 creates per day */
  'messenger.templates.create': [{ per: 'endpoint', day: 100 }],
} as const satisfies RateTable;

export type MessengerRateAction = keyof typeof MESSENGER_RATE_LIMITS;
