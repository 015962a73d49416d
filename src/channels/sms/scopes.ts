import type { ModuleScopes } from '../../accounts/scopes.js';

/** The key scopes of the SMS module, in its namespace, with what each grants: merged into the catalogue at boot. */
export const SMS_SCOPES = {
  'sms:send': 'send SMS (single, bulk, resend)',
  'sms:read': 'read SMS status, batches and inbound messages',
} as const satisfies ModuleScopes;

// Its scopes type-check on its routes and tools (an augmentation, so the core imports nothing of the product).
declare module '../../accounts/scopes.js' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  interface ProductScopes extends Record<keyof typeof SMS_SCOPES, true> {}
}
