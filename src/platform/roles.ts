/**
 * Process roles (docs/operations.md, "Process roles"): which parts of the daemon one process runs. Default: every
 * role in one process. `realtime` and `media` are accepted now so that unit files and config need not change when
 * the products that hold long-lived sockets and media streams arrive.
 */
export const ROLES = ['api', 'smpp', 'workers', 'realtime', 'media'] as const;
export type Role = (typeof ROLES)[number];

/** The roles a process runs; `has` answers for one. */
export class RoleSet {
  readonly list: readonly Role[];
  private readonly set: ReadonlySet<Role>;

  constructor(roles: Iterable<Role>) {
    this.set = new Set(roles);
    this.list = ROLES.filter((r) => this.set.has(r));
  }

  static all(): RoleSet {
    return new RoleSet(ROLES);
  }

  has(role: Role): boolean {
    return this.set.has(role);
  }

  /** True when any of the roles runs here (a part without roles runs everywhere). */
  any(roles: readonly Role[] | undefined): boolean {
    return !roles || roles.some((r) => this.set.has(r));
  }

  /** Every role in one process (the default): nothing is split off to another process. */
  get isAll(): boolean {
    return ROLES.every((r) => this.set.has(r));
  }

  toString(): string {
    return this.isAll ? 'all' : this.list.join(',');
  }
}

/**
 * Reads `roles` from config, FERRY_ROLE or `--role`: a list or a comma-separated string; `all` is every role. Throws
 * with a message naming the unknown role.
 */
export function parseRoles(value: string | readonly string[] | null | undefined): RoleSet {
  const items = (typeof value === 'string' ? value.split(',') : [...(value ?? [])]).map((s) => s.trim().toLowerCase()).filter(Boolean);
  if (!items.length || items.includes('all')) return RoleSet.all();
  const unknown = items.filter((r) => !(ROLES as readonly string[]).includes(r));
  if (unknown.length) throw new Error(`unknown role ${unknown.join(', ')}: roles are all, ${ROLES.join(', ')}`);
  return new RoleSet(items as Role[]);
}
