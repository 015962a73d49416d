import type { ChannelModule } from './channel-module.js';

/** Where a module's admin routes may be: `/admin/<name>`, `/admin/sim/<simulator>`, and its historic paths. */
export function adminPathsOf(m: Pick<ChannelModule, 'name' | 'simulators' | 'historicAdminPaths'>): string[] {
  return [`/admin/${m.name}`, ...(m.simulators ?? []).map((s) => `/admin/sim/${s.name}`), ...(m.historicAdminPaths ?? [])];
}

/** Throws when `url` is outside the module's admin paths (each a path or a prefix ending at a `/`). */
export function checkAdminPath(m: Pick<ChannelModule, 'name' | 'simulators' | 'historicAdminPaths'>, url: string): void {
  const allowed = adminPathsOf(m);
  if (allowed.some((p) => url === p || url.startsWith(p + '/'))) return;
  throw new Error(`module ${m.name} registers the admin route ${url} outside its paths (${allowed.join(', ')})`);
}
