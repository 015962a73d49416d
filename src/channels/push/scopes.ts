import type { ModuleScopes } from '../../accounts/scopes.js';

/**
 * The key scopes of mobile push, merged into the catalogue at boot. Both were accepted on keys as planned scopes before
 * the module arrived (src/accounts/scopes.ts PLANNED_SCOPES); declared here, they become the module's with these
 * descriptions (installModuleScopes), so keys that hold them keep working.
 */
export const PUSH_SCOPES = {
  'push:send': 'send mobile push notifications',
  'push:manage': 'manage push apps, credentials, devices and topics',
} as const satisfies ModuleScopes;

// Its scopes type-check on its routes and tools (an augmentation, so the core imports nothing of the product).
declare module '../../accounts/scopes.js' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  interface ProductScopes extends Record<keyof typeof PUSH_SCOPES, true> {}
}
