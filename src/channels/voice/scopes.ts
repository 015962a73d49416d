import type { ModuleScopes } from '../../accounts/scopes.js';

/**
 * The key scope of voice calls. Accepted on keys as a planned scope before the module arrived (src/accounts/scopes.ts
 * PLANNED_SCOPES); declared here, it becomes the module's, so keys that hold it keep working.
 */
export const VOICE_SCOPES = {
  'voice:calls': 'place, list and hang up voice calls',
} as const satisfies ModuleScopes;

declare module '../../accounts/scopes.js' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  interface ProductScopes extends Record<keyof typeof VOICE_SCOPES, true> {}
}
