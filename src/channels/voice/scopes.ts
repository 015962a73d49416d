import type { ModuleScopes } from '../../accounts/scopes.js';

/**
 * The key scopes of voice calls and AI voice agents. Accepted on keys as planned scopes before the module arrived
 * (src/accounts/scopes.ts PLANNED_SCOPES); declared here, they become the module's, so keys that hold them keep working.
 */
export const VOICE_SCOPES = {
  'voice:calls': 'place, list and hang up voice calls',
  'voice:agents': 'create, read, change and delete AI voice agents, and route the account\'s numbers to them',
} as const satisfies ModuleScopes;

declare module '../../accounts/scopes.js' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  interface ProductScopes extends Record<keyof typeof VOICE_SCOPES, true> {}
}
