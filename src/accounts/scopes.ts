/**
 * API key scopes. The core's own (the account's, the numbers it owns) and those of planned products that keys accept
 * today so that keys need not change when the products arrive; every product module declares its own (its `scopes`,
 * in its namespace), merged at boot by installModuleScopes. `all` grants every one.
 */
export const CORE_SCOPES = {
  'numbers:read': 'read the numbers an account owns',
  'account:read': 'read the account and its balance',
} as const;

/** Scopes of products still to come: accepted on keys now; the product's module takes its scope over when it arrives. */
export const PLANNED_SCOPES = {
  'voice:calls': 'place and control voice calls (planned)',
  'voice:agents': 'manage AI voice agents (planned)',
  'chat:manage': 'manage in-app chat channels and users (planned)',
  'push:send': 'send mobile push notifications (planned)',
  'push:manage': 'manage push apps, credentials and devices (planned)',
} as const;

/** The scopes a module declares: scope → what it grants. */
export type ModuleScopes = Readonly<Record<string, string>>;

/**
 * The scopes of the products, filled in by each product's scopes.ts (declaration merging) so that a route's or a
 * tool's scope is checked without the core importing the product.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface ProductScopes {}

export type Scope = keyof typeof CORE_SCOPES | keyof typeof PLANNED_SCOPES | keyof ProductScopes;

/** Module scopes installed so far, in install order, with the module that declared each. */
const installed = new Map<string, { description: string; owner: string }>();

/** Every scope of this version as of boot: the core's, the running modules', then the planned ones; kept current in place. */
export const SCOPES: Scope[] = [];
refreshScopes();

function refreshScopes(): void {
  const list = [...Object.keys(CORE_SCOPES), ...installed.keys(), ...Object.keys(PLANNED_SCOPES).filter((s) => !installed.has(s))];
  SCOPES.splice(0, SCOPES.length, ...(list as Scope[]));
}

/**
 * Merges the modules' scopes into the catalogue, all or none. A module's scope must be in its namespace (`<name>:`,
 * or one it lists in `scopeNamespaces`), and neither a core scope nor another module's; otherwise the boot stops,
 * naming the module. A planned scope declared by its module becomes that module's. A module installed again (another
 * daemon in this process) keeps its scopes.
 */
export function installModuleScopes(modules: readonly { name: string; scopes?: ModuleScopes; scopeNamespaces?: readonly string[] }[]): void {
  const adding = new Map<string, { description: string; owner: string }>();
  for (const m of modules) {
    const namespaces = [m.name, ...(m.scopeNamespaces ?? [])];
    for (const [scope, description] of Object.entries(m.scopes ?? {})) {
      const ns = scope.includes(':') ? scope.slice(0, scope.indexOf(':')) : '';
      if (!namespaces.includes(ns) || scope.length === ns.length + 1) {
        throw new Error(`module ${m.name} declares the scope ${scope} outside its namespace (${namespaces.map((n) => `${n}:…`).join(', ')})`);
      }
      if (Object.hasOwn(CORE_SCOPES, scope)) throw new Error(`module ${m.name} declares the scope ${scope}, which is a scope of the core`);
      const other = adding.get(scope)?.owner ?? installed.get(scope)?.owner;
      if (other !== undefined && other !== m.name) throw new Error(`the scope ${scope} is declared twice: by module ${other} and by module ${m.name}`);
      adding.set(scope, { description, owner: m.name });
    }
  }
  for (const [scope, entry] of adding) installed.set(scope, entry);
  refreshScopes();
}

/** The scope catalogue as of boot (scope → what it grants), in the order of SCOPES: for the API description and docs. */
export function scopeCatalogue(): Readonly<Record<string, string>> {
  const described: Record<string, string> = { ...CORE_SCOPES, ...PLANNED_SCOPES };
  for (const [scope, e] of installed) described[scope] = e.description;
  return Object.fromEntries(SCOPES.map((s) => [s, described[s]]));
}

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
