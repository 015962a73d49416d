import type { ModuleScopes } from '../../accounts/scopes.js';

/** The key scopes of the messenger module, in its namespace, with what each grants: merged into the catalogue at boot. */
export const MESSENGER_SCOPES = {
  'messenger:send': 'send messenger messages',
  'messenger:read': 'read messenger messages and conversations',
  'messenger:templates': 'manage messenger templates',
} as const satisfies ModuleScopes;

// Its scopes type-check on its routes and tools (an augmentation, so the core imports nothing of the product).
declare module '../../accounts/scopes.js' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  interface ProductScopes extends Record<keyof typeof MESSENGER_SCOPES, true> {}
}
