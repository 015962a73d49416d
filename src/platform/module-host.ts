import type { Server as HttpServer } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { installModuleScopes } from '../accounts/scopes.js';
import { registerEventTypes } from '../events/catalogue.js';
import { buildConfigSchema } from '../config/module-sections.js';
import { installModuleErrors } from '../http/errors.js';
import type { FerryConfig } from '../config/schema.js';
import type { McpTool } from './mcp-tool.js';
import type { TableDeclaration } from '../store/sql/table-declaration.js';
import type { ChannelModule, ModuleContext, ModuleInstance } from './channel-module.js';
import { checkAdminPath } from './admin-paths.js';
import { checkApiPath } from './route-paths.js';
import { bootOrder, declaredTables, migrationFolders } from './module-order.js';
import { RoleSet } from './roles.js';
import type { JobSpec } from './scheduler.js';
import type { ModuleFacilities } from './module-platform.js';

/** The core's part of every module's context; the host adds the module's own logger and `use`. */
export type CoreContext = Omit<ModuleContext, 'log' | 'use' | 'section' | keyof ModuleFacilities> & {
  /** The facilities scoped to one module (keys, events, Redis, pub/sub, HTTP, credentials). */
  facilities(module: ChannelModule): ModuleFacilities;
};

/**
 * Boots a list of modules in dependency order, mounts their routes, and stops them in reverse. A module reaches
 * another only through `use()` of a module it declared in `dependsOn`.
 */
export class ModuleHost {
  readonly order: readonly ChannelModule[];
  private readonly instances = new Map<string, ModuleInstance>();
  private readonly started: string[] = [];

  constructor(modules: readonly ChannelModule[]) {
    this.order = bootOrder(modules);
    // Declarations: a config section, an error code or a scope declared twice (or a scope outside the module's
    // namespace) stops the boot here, naming the module.
    buildConfigSchema(this.order);
    installModuleErrors(this.order);
    installModuleScopes(this.order);
    for (const m of this.order) {
      // Before any route is registered, so the OpenAPI document and the endpoint validation know them.
      if (m.events) registerEventTypes(m.events);
    }
  }

  /** Creates every module in boot order; a failure stops the ones already created (in reverse) and rethrows. */
  async create(core: CoreContext): Promise<void> {
    for (const m of this.order) {
      const allowed = new Set(m.dependsOn ?? []);
      const ctx: ModuleContext = {
        ...core,
        ...core.facilities(m),
        log: core.rootLog.child({ component: m.name }),
        use: <T>(name: string): T => {
          if (!allowed.has(name)) throw new Error(`module ${m.name} uses ${name} without declaring it in dependsOn`);
          return this.service<T>(name);
        },
        section: <T>(): T => moduleSection<T>(core.config, m),
      };
      this.instances.set(m.name, await m.create(ctx));
    }
  }

  /** Starts workers in boot order (those of modules that run in this process's roles), then opens each module's listeners. */
  async start(): Promise<void> {
    for (const m of this.order) {
      if (this.roles.any(m.roles)) await this.instances.get(m.name)?.start?.();
      this.started.push(m.name);
      await this.openListeners(m.name);
    }
  }

  /**
   * Registers every module's routes on the API app (the api role's listener), each in its own scope that refuses a path
   * outside `/v1/<name>` and the module's historicApiPaths: a misplaced route fails the boot.
   */
  async routes(app: FastifyInstance): Promise<void> {
    if (!this.roles.has('api')) return;
    await this.mountScoped(app, (i) => i.routes, checkApiPath);
  }

  /** Attaches every module's real-time endpoint to the API listener's server, in a process running the realtime role. */
  async attachRealtime(server: HttpServer): Promise<number> {
    if (!this.roles.has('realtime')) return 0;
    let attached = 0;
    for (const m of this.order) {
      const realtime = this.instances.get(m.name)?.realtime;
      if (!realtime) continue;
      await realtime.attach(server);
      attached++;
    }
    return attached;
  }

  /** Whether any created module has a real-time endpoint (the realtime role then needs the API listener). */
  hasRealtime(): boolean {
    return this.order.some((m) => this.instances.get(m.name)?.realtime !== undefined);
  }

  /** Drains every attached real-time endpoint, in reverse boot order. */
  async drainRealtime(): Promise<void> {
    if (!this.roles.has('realtime')) return;
    for (const m of [...this.order].reverse()) await this.instances.get(m.name)?.realtime?.drain();
  }

  /**
   * Registers every module's admin routes on the admin app (inside its token check), each in its own scope that
   * refuses a path outside the module's prefixes (adminPathsOf): a misplaced route fails the boot.
   */
  async adminRoutes(app: FastifyInstance): Promise<void> {
    await this.mountScoped(app, (i) => i.adminRoutes, checkAdminPath);
  }

  /** Each module's routes of one kind in a scope of its own, where every route's path is checked as it is added. */
  private async mountScoped(
    app: FastifyInstance,
    pick: (instance: ModuleInstance) => ((scope: FastifyInstance) => Promise<void>) | undefined,
    check: (m: ChannelModule, url: string) => void,
  ): Promise<void> {
    for (const m of this.order) {
      const instance = this.instances.get(m.name);
      const register = instance && pick(instance);
      if (!register) continue;
      await app.register(async (scope) => {
        scope.addHook('onRoute', (route) => check(m, route.url));
        await register.call(instance, scope);
      });
    }
  }

  /** The MCP tools the modules bring, in boot order. */
  mcpTools(): McpTool[] {
    return this.order.flatMap((m) => [...(this.instances.get(m.name)?.mcpTools ?? [])]);
  }

  /** The service a module exposes. */
  service<T>(name: string): T {
    const instance = this.instances.get(name);
    if (!instance) throw new Error(`module ${name} is not running`);
    return instance.service as T;
  }

  has(name: string): boolean {
    return this.instances.has(name);
  }

  /** Each created module's health check; a module without one is healthy while it runs. */
  async health(): Promise<Record<string, { ok: boolean; detail?: string }>> {
    const out: Record<string, { ok: boolean; detail?: string }> = {};
    for (const m of this.order) {
      const instance = this.instances.get(m.name);
      if (!instance?.health) continue;
      try {
        await instance.health();
        out[m.name] = { ok: true };
      } catch (err) {
        out[m.name] = { ok: false, detail: (err as Error).message };
      }
    }
    return out;
  }

  /** Stop steps in reverse boot order, for the daemon's shutdown sequence (each step bounded there). */
  stopSteps(): { name: string; close: () => Promise<unknown> }[] {
    return [...this.order]
      .reverse()
      .filter((m) => this.instances.has(m.name))
      .map((m) => ({
        name: m.name,
        close: async () => {
          await this.closeListeners(m.name);
          if (this.roles.any(m.roles)) await this.instances.get(m.name)?.stop?.();
        },
      }));
  }

  /** OpenAPI tags of the modules, with their maturity. */
  tags(): Array<{ name: string; description: string; 'x-maturity': string }> {
    return this.order.map((m) => ({ ...m.tag, 'x-maturity': m.maturity }));
  }

  /** Migration folders the modules bring. */
  migrationFolders(): string[] {
    return migrationFolders(this.order);
  }
  // Process roles, listeners and jobs (issue 43).
  /** The roles this process runs; set by the daemon before create(). */
  roles: RoleSet = RoleSet.all();
  /** Bound addresses of the open listeners, by listener name. */
  readonly listenerAddresses: Record<string, string> = {};
  private readonly openedListeners = new Map<string, Array<{ name: string; close(): Promise<void> }>>();

  /** The jobs of every created module that run in this process's roles (default role: workers). */
  jobs(): JobSpec[] {
    return this.order.flatMap((m) => [...(this.instances.get(m.name)?.jobs ?? [])]).filter((j) => this.roles.any(j.roles ?? ['workers']));
  }

  /** Every declared listener with its role and, when open here, its address (for /readyz). */
  listeners(): Array<{ module: string; name: string; kind: string; role: string; address: string | null }> {
    return this.order.flatMap((m) =>
      (this.instances.get(m.name)?.listeners ?? []).map((l) => ({ module: m.name, name: l.name, kind: l.kind, role: l.role, address: this.listenerAddresses[l.name] ?? null })),
    );
  }

  private async openListeners(moduleName: string): Promise<void> {
    const opened: Array<{ name: string; close(): Promise<void> }> = [];
    this.openedListeners.set(moduleName, opened);
    for (const l of this.instances.get(moduleName)?.listeners ?? []) {
      if (!this.roles.has(l.role)) continue;
      if (l.name in this.listenerAddresses) throw new Error(`listener ${l.name} is declared twice`);
      try {
        this.listenerAddresses[l.name] = await l.open();
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EADDRINUSE') throw new Error(`${l.name} listener: ${l.host}:${l.port} is already in use`);
        if (code === 'EACCES') throw new Error(`${l.name} listener: no permission to listen on ${l.host}:${l.port}`);
        if (code === 'EADDRNOTAVAIL') throw new Error(`${l.name} listener: address ${l.host} is not available on this machine`);
        throw new Error(`${l.name} listener on ${l.host}:${l.port}: ${(err as Error).message}`);
      }
      opened.unshift(l);
    }
  }

  private async closeListeners(moduleName: string): Promise<void> {
    for (const l of this.openedListeners.get(moduleName) ?? []) {
      await l.close();
      delete this.listenerAddresses[l.name];
    }
    this.openedListeners.delete(moduleName);
  }

  // Storage (issue 43, tables).
  /** The core's tables and the modules' (boot order), for retention and table maintenance. */
  tables(): readonly TableDeclaration[] {
    return declaredTables(this.order);
  }
}

/** A module's validated config section; absent when the config was loaded without this module in its list. */
function moduleSection<T>(config: FerryConfig, m: ChannelModule): T {
  if (!m.config) throw new Error(`module ${m.name} reads a config section but declares none`);
  const section = config[m.config.key];
  if (section === undefined) throw new Error(`the config has no ${m.config.key} section: it was loaded without module ${m.name} in its module list`);
  return section as T;
}
