import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { AccountService } from '../accounts/account-service.js';
import type { Scope } from '../accounts/scopes.js';
import type { FerryConfig } from '../config/schema.js';
import type { McpTool } from '../mcp/mcp-tool.js';
import type { Metrics } from '../metrics.js';
import type { Backends, Db } from '../store/types.js';
import type { OutboundRegistry } from './outbound-registry.js';
import type { ModuleCredentials } from '../security/credential-store.js';
import type { TargetGuard } from '../security/target-guard.js';
import type { ModuleEvents } from './event-sink.js';
import type { ModulePubSub } from './pubsub.js';
import type { ModuleRedis } from './redis-clients.js';

/** Spec §9.2: how far along a product is; shown in the OpenAPI document as the tag's `x-maturity`. */
export type Maturity = 'stable' | 'beta' | 'alpha';

/**
 * What a module may use from the core. Not the daemon: a product reaches storage, the queue backends, events,
 * logging and metrics through this, and another product only through `use()` of a module it depends on.
 */
export interface ModuleContext {
  readonly config: FerryConfig;
  /** A child logger with `component: <module name>`. */
  readonly log: Logger;
  /** The daemon's logger, for parts that name their own component. */
  readonly rootLog: Logger;
  readonly metrics: Metrics;
  readonly db: Db;
  readonly backends: Backends;
  readonly accounts: AccountService;
  /**
   * Derives a key for one purpose from the daemon's secret key; the master never leaves the core. A module's purposes
   * are `<module>-…` (a few older ones are owned by name, src/platform/module-keys.ts); another's throw.
   */
  deriveKey(purpose: string): Buffer;
  /** Adds a warning to /readyz (e.g. a simulator standing in for a provider). */
  warn(message: string): void;
  /** Takes a warning back (the condition ended). */
  unwarn(message: string): void;
  /**
   * The outbound pipeline to providers that are not SMPP upstreams (docs/outbound.md): register the product and its
   * providers in `create`; `outbound.pipeline` is there from `start` on.
   */
  readonly outbound: OutboundRegistry;
  /** The service of a module this one depends on (listed in `dependsOn`). */
  use<T>(moduleName: string): T;
  // What products kept rebuilding, from the core and scoped to the module (src/platform/module-platform.ts).
  /** Events in the caller's transaction (types from the module's `events`), delivered by the webhooks module. */
  readonly events: ModuleEvents;
  /** Redis clients from the one factory (null when embedded), closed by the core at shutdown. */
  readonly redis: ModuleRedis;
  /** Pub/sub across the daemon's instances, namespaced per module (Redis, or in-process when embedded). */
  readonly pubsub: ModulePubSub;
  /** The one guarded HTTP client policy for URLs customers give (SSRF guard, pinned address, bounds, no redirects). */
  readonly http: TargetGuard;
  /** Per-account provider credentials of this module, sealed at rest, fingerprints only on read. */
  readonly credentials: ModuleCredentials;
}

/** What `create` returns: the running parts of a module. */
export interface ModuleInstance<S = unknown> {
  /** What dependent modules get from `use()`. */
  readonly service: S;
  /** Registered on the API listener; paths under `/v1/<module name>`. */
  routes?(app: FastifyInstance): Promise<void>;
  /** Registered on the admin listener, behind the admin token; paths under `/admin/<module name>` (or `/admin/sim/<module name>`). */
  adminRoutes?(app: FastifyInstance): Promise<void>;
  /** Background workers; called after every module is created, in boot order. */
  start?(): Promise<void>;
  /** Stops workers and flushes; called in reverse boot order. */
  stop?(): Promise<void>;
  /** Its tools on the MCP server (/mcp), each calling one of its REST endpoints. */
  readonly mcpTools?: readonly McpTool[];
  /** Throws (with a message) when the module cannot serve; part of /readyz. */
  health?(): Promise<void>;
}

/**
 * A product: one folder `src/channels/<name>/` whose index.ts exports one of these. The daemon holds the list and
 * derives boot and stop order from `dependsOn`.
 */
export interface ChannelModule<S = unknown> {
  readonly name: string;
  readonly maturity: Maturity;
  /** The OpenAPI tag its operations carry. */
  readonly tag: { name: string; description: string };
  /** The key scopes its endpoints require (each must be in the scope catalogue, src/accounts/scopes.ts). */
  readonly scopes: readonly Scope[];
  /** Its webhook event types (`<product>.<event>`) with their descriptions; they join the one catalogue. */
  readonly events?: Readonly<Record<string, string>>;
  /** Its key in the config (a section of the one JSON schema, src/config/schema.ts), if it has one. */
  readonly configKey?: keyof FerryConfig;
  /** A folder of its own SQL migrations (NNNN_name.sql, numbered in the one sequence), if it has one. */
  readonly migrations?: string;
  /** Modules whose service it uses; they boot before it and stop after it. */
  readonly dependsOn?: readonly string[];
  create(ctx: ModuleContext): Promise<ModuleInstance<S>>;
}
