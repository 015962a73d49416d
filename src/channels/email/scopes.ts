import type { ModuleScopes } from '../../accounts/scopes.js';

/** The key scopes of the email module, in its namespace, with what each grants: merged into the catalogue at boot. */
export const EMAIL_SCOPES = {
  'email:send': 'send email',
  'email:read': 'read email status and events',
  'email:manage': 'manage sending domains, templates and suppressions',
} as const satisfies ModuleScopes;

// Its scopes type-check on its routes and tools (an augmentation, so the core imports nothing of the product).
declare module '../../accounts/scopes.js' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  interface ProductScopes extends Record<keyof typeof EMAIL_SCOPES, true> {}
}
