import type { FastifyInstance } from 'fastify';
import { isScope } from '../accounts/scopes.js';
import { registerEventTypes } from '../events/catalogue.js';
import type { McpTool } from '../mcp/mcp-tool.js';
import type { ChannelModule, ModuleContext, ModuleInstance } from './channel-module.js';
import { bootOrder, migrationFolders } from './module-order.js';
import type { ModuleFacilities } from './module-platform.js';

/** The core's part of every module's context; the host adds the module's own logger and `use`. */
export type CoreContext = Omit<ModuleContext, 'log' | 'use' | keyof ModuleFacilities> & {
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
    for (const m of this.order) {
      const unknown = m.scopes.filter((s) => !isScope(s));
      if (unknown.length) throw new Error(`module ${m.name} declares unknown scopes: ${unknown.join(', ')}`);
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
      };
      this.instances.set(m.name, await m.create(ctx));
    }
  }

  /** Starts workers in boot order. */
  async start(): Promise<void> {
    for (const m of this.order) {
      await this.instances.get(m.name)?.start?.();
      this.started.push(m.name);
    }
  }

  /** Registers every module's routes on the API app. */
  async routes(app: FastifyInstance): Promise<void> {
    for (const m of this.order) await this.instances.get(m.name)?.routes?.(app);
  }

  /** Registers every module's admin routes on the admin app (inside its token check). */
  async adminRoutes(app: FastifyInstance): Promise<void> {
    for (const m of this.order) await this.instances.get(m.name)?.adminRoutes?.(app);
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
      .map((m) => ({ name: m.name, close: async () => this.instances.get(m.name)?.stop?.() }));
  }

  /** OpenAPI tags of the modules, with their maturity. */
  tags(): Array<{ name: string; description: string; 'x-maturity': string }> {
    return this.order.map((m) => ({ ...m.tag, 'x-maturity': m.maturity }));
  }

  /** Migration folders the modules bring. */
  migrationFolders(): string[] {
    return migrationFolders(this.order);
  }
}
