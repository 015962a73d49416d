import type { ChannelModule } from './channel-module.js';

type RouteDeclarations = Pick<ChannelModule, 'name' | 'historicApiPaths' | 'apiPaths'>;

/** Where a module's API routes may be: `/v1/<name>`, the paths it declares, and its historic paths. */
export function apiPathsOf(m: RouteDeclarations): string[] {
  return [`/v1/${m.name}`, ...(m.apiPaths ?? []), ...(m.historicApiPaths ?? [])];
}

/** Throws when `url` is outside the module's API paths (each a path or a prefix ending at a `/`). */
export function checkApiPath(m: RouteDeclarations, url: string): void {
  const allowed = apiPathsOf(m);
  if (allowed.some((p) => url === p || url.startsWith(p + '/'))) return;
  throw new Error(`module ${m.name} registers the API route ${url} outside its paths (${allowed.join(', ')})`);
}
