/** API key scopes (spec §5.5). */
export const SCOPES = [
  'sms:send',
  'sms:read',
  'otp:send',
  'otp:verify',
  'messenger:send',
  'messenger:read',
  'messenger:templates',
  'webhooks:manage',
  'numbers:read',
  'account:read',
] as const;

export type Scope = (typeof SCOPES)[number];

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
