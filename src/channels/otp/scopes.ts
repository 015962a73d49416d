import type { ModuleScopes } from '../../accounts/scopes.js';

/** The key scopes of the OTP module, in its namespace, with what each grants: merged into the catalogue at boot. */
export const OTP_SCOPES = {
  'otp:send': 'request and resend OTP codes',
  'otp:verify': 'verify OTP codes',
} as const satisfies ModuleScopes;

// Its scopes type-check on its routes and tools (an augmentation, so the core imports nothing of the product).
declare module '../../accounts/scopes.js' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  interface ProductScopes extends Record<keyof typeof OTP_SCOPES, true> {}
}
