import type { ModuleScopes } from '../../accounts/scopes.js';

/**
 * The key scope of in-app chat, merged into the catalogue at boot (planned in src/accounts/scopes.ts before the module
 * arrived; keys that hold it keep working). End users act with the tokens it mints, not with scopes.
 */
export const CHAT_SCOPES = {
  'chat:manage': 'manage in-app chat: mint user tokens, users, channels, members and messages (server side)',
} as const satisfies ModuleScopes;

// Its scopes type-check on its routes and tools (an augmentation, so the core imports nothing of the product).
declare module '../../accounts/scopes.js' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  interface ProductScopes extends Record<keyof typeof CHAT_SCOPES, true> {}
}
