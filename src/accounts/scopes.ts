/**
 * API key scopes: the spec's ten (§5.5) and those of the products the spec leaves without. A product module
 * declares the scopes its endpoints require; each must be here. `all` grants every one.
 */
export const SCOPE_DESCRIPTIONS = {
  'sms:send': 'send SMS (single, bulk, resend)',
  'sms:read': 'read SMS status, batches and inbound messages',
  'otp:send': 'request and resend OTP codes',
  'otp:verify': 'verify OTP codes',
  'messenger:send': 'send messenger messages',
  'messenger:read': 'read messenger messages and conversations',
  'messenger:templates': 'manage messenger templates',
  'webhooks:manage': 'manage webhook endpoints, secrets and deliveries',
  'numbers:read': 'read the numbers an account owns',
  'account:read': 'read the account and its balance',
  'email:send': 'send email',
  'email:read': 'read email status and events',
  'email:manage': 'manage sending domains, templates and suppressions',
  'voice:calls': 'place and control voice calls (planned)',
  'voice:agents': 'manage AI voice agents (planned)',
  'ussd:manage': 'manage USSD menus and service codes',
  'ussd:read': 'read USSD sessions',
  'chat:manage': 'manage in-app chat channels and users (planned)',
  'push:send': 'send mobile push notifications (planned)',
  'push:manage': 'manage push apps, credentials and devices (planned)',
  'shortlink:manage': 'create, change and delete short links',
  'shortlink:read': 'read short links and their clicks',
  'logs:read': 'read the request logs and the key statistics',
} as const;

export const SCOPES = Object.keys(SCOPE_DESCRIPTIONS) as Array<keyof typeof SCOPE_DESCRIPTIONS>;

export type Scope = keyof typeof SCOPE_DESCRIPTIONS;

export function isScope(s: string): s is Scope {
  return (SCOPES as readonly string[]).includes(s);
}

/** "a,b" or "all" → validated scope list; throws naming the unknown scope. */
export function parseScopes(input: string | readonly string[]): Scope[] {
  const list = typeof input === 'string' ? input.split(',').map((s) => s.trim()).filter(Boolean) : [...input];
  if (list.length === 1 && list[0] === 'all') return [...SCOPES];
  const bad = list.filter((s) => !isScope(s));
  if (bad.length) throw new Error(`unknown scope${bad.length > 1 ? 's' : ''}: ${bad.join(', ')} (known: ${SCOPES.join(', ')}, or all)`);
  if (!list.length) throw new Error('at least one scope is required');
  return [...new Set(list)] as Scope[];
}

/** Whether the input asks for every scope ("all"), which is stored as such so later scopes are granted too. */
export function isAllScopes(input: string | readonly string[]): boolean {
  const list = typeof input === 'string' ? input.split(',').map((s) => s.trim()).filter(Boolean) : input;
  return list.length === 1 && list[0] === 'all';
}

/** A key's stored scopes as granted now: "all" is every scope of this version, unknown ones (a newer version's) are dropped. */
export function grantedScopes(stored: readonly string[]): Scope[] {
  if (stored.includes('all')) return [...SCOPES];
  return stored.filter(isScope);
}
