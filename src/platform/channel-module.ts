import type { Server as HttpServer } from 'node:http';
import type { Command } from 'commander';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { AccountService } from '../accounts/account-service.js';
import type { ModuleHolds } from '../billing/balance-holds.js';
import type { ModuleScopes } from '../accounts/scopes.js';
import type { CliContext } from '../cli/cli-context.js';
import type { FerryConfig } from '../config/schema.js';
import type { ConfigSectionDeclaration } from '../config/module-sections.js';
import type { ModuleErrors } from '../http/errors.js';
import type { McpTool } from './mcp-tool.js';
import type { Metrics } from '../metrics.js';
import type { TableDeclaration } from '../store/sql/table-declaration.js';
import type { Backends, Db } from '../store/types.js';
import type { OutboundRegistry } from './outbound-registry.js';
import type { Role, RoleSet } from './roles.js';
import type { JobSpec } from './scheduler.js';
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
  // Declarations: the module's own config section.
  /** This module's config section (its `config` declaration), validated and with its defaults filled in. */
  section<T>(): T;
  // Process roles (src/platform/roles.ts): what this process runs, for a module that starts parts per role.
  /** The roles this process runs (`ferry start --role`); every role by default. */
  readonly roles: RoleSet;
  // What products kept rebuilding, from the core and scoped to the module (src/platform/module-platform.ts).
  /**
   * For reads that tolerate replica lag (lists, searches, analytics): a read-only pool on database.readUrl, falling
   * back to the primary while the replica is unreachable; `db` itself when no read URL is set. Never for a write, nor
   * for a read that must see a write just made (idempotency, auth, balances, a check before an update).
   */
  readonly readDb: Db;
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
  /**
   * Credit held for work priced when it ends (a call's longest duration, settled at hang-up), in the caller's
   * transaction; account transactions of kinds `<module>_hold` and `<module>_release`.
   */
  readonly holds: ModuleHolds;
  // The MCP server (a module itself) serves every tool.
  /** Every MCP tool of the core and of the created modules; complete from routes() on (after every create). */
  mcpTools(): readonly McpTool[];
}

/**
 * A listener a module declares, resolved from its config. The host opens it right after the module's start() when
 * its role runs here, closes it before the module's stop(), and reports its bound address by name (`ferry started`,
 * /readyz).
 */
export interface ModuleListener {
  /** The name it is reported by (`smpp`, `shortlink`, `emailInbound`). */
  readonly name: string;
  readonly kind: 'http' | 'tcp' | 'udp';
  readonly role: Role;
  readonly host: string;
  readonly port: number;
  /** Opens it; resolves with the bound address (host:port, or the URL of an http listener). */
  open(): Promise<string>;
  close(): Promise<void>;
}

/**
 * A module's real-time endpoint: attached to the HTTP server of the API listener in a process running the `realtime`
 * role (that process opens the API listener for it even without the `api` role, without the products' routes), before it
 * listens; drained before the listener closes, so clients are told to reconnect elsewhere rather than cut.
 */
export interface ModuleRealtime {
  attach(server: HttpServer): Promise<void>;
  /** Tells live clients to reconnect (to another instance) and closes their connections; within the drain timeout. */
  drain(): Promise<void>;
}

/** What `create` returns: the running parts of a module. */
export interface ModuleInstance<S = unknown> {
  /** What dependent modules get from `use()`. */
  readonly service: S;
  /** Registered on the API listener; paths under `/v1/<module name>`. */
  routes?(app: FastifyInstance): Promise<void>;
  /**
   * Registered on the admin listener, behind the admin token; paths under `/admin/<module name>`, `/admin/sim/<simulator
   * name>` for its simulators' controls, or one of its `historicAdminPaths` (a path elsewhere fails the boot).
   */
  adminRoutes?(app: FastifyInstance): Promise<void>;
  /**
   * Loads stored state and starts background workers (and what they need, such as an embedded simulator); called after
   * every module is created, in boot order, before its listeners open and before the outbound pipeline's workers start.
   */
  start?(): Promise<void>;
  /** Stops workers and flushes; called in reverse boot order. */
  stop?(): Promise<void>;
  /** Its tools on the MCP server (/mcp), each calling one of its REST endpoints. */
  readonly mcpTools?: readonly McpTool[];
  /** Long-lived client connections (WebSocket, Socket.IO) on the API listener's HTTP server, in the realtime role. */
  readonly realtime?: ModuleRealtime;
  /** Throws (with a message) when the module cannot serve; part of /readyz. */
  health?(): Promise<void>;
  // Jobs and listeners (src/platform/scheduler.ts; the host opens listeners and runs jobs in their roles).
  /** Periodic jobs, run by the platform's one scheduler in their roles (default workers). */
  readonly jobs?: readonly JobSpec[];
  /** Listeners, opened by the host after start() in their role. */
  readonly listeners?: readonly ModuleListener[];
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
  /** The key scopes it declares (its scopes.ts), each with what it grants, in its namespace (`<name>:…`); merged at boot. */
  readonly scopes?: ModuleScopes;
  /** Its webhook event types (`<product>.<event>`) with their descriptions; they join the one catalogue. */
  readonly events?: Readonly<Record<string, string>>;
  /** A folder of its own SQL migrations (NNNN_name.sql, numbered in the one sequence), if it has one. */
  readonly migrations?: string;
  // Storage (issue 43, tables): what the core maintains for the tables its migrations create.
  /** Its tables with a retention (purged by the core's retention pass) or needing vacuuming (table maintenance). */
  readonly tables?: readonly TableDeclaration[];
  /** Modules whose service it uses; they boot before it and stop after it. */
  readonly dependsOn?: readonly string[];
  // Declarations merged by the core at boot: config section, error codes, scope namespaces.
  /** Its config section: a top-level key (its name, by convention) and the section's JSON schema with defaults. */
  readonly config?: ConfigSectionDeclaration;
  /** Its error codes with their HTTP status and default message (its errors.ts); unique across the core and every module. */
  readonly errors?: ModuleErrors;
  /** Namespaces its scopes may use besides its name (e.g. a product named `messenger` owning `whatsapp:…`). */
  readonly scopeNamespaces?: readonly string[];
  /**
   * Builds the module's objects and does no I/O: no query, no Redis or pub/sub use, no socket, listener or timer
   * (test/platform/create-does-no-io.test.ts); that is start()'s.
   */
  create(ctx: ModuleContext): Promise<ModuleInstance<S>>;
  // Process roles: where its workers run.
  /** The roles in whose process its start() and stop() run (default: every role); routes run in `api`, admin routes everywhere. */
  readonly roles?: readonly Role[];
  // CLI, simulators and admin paths (issue 43): what `ferry` and the admin listener get from the module.
  /** Adds its commands to `ferry` (e.g. `ferry <name> list`). Static: runs without `create()`, the daemon need not run. */
  readonly cli?: (program: Command, ctx: CliContext) => void;
  /** Its simulators: each gets `ferry sim <name>` and may have controls under `/admin/sim/<name>`. */
  readonly simulators?: readonly SimulatorDeclaration[];
  /**
   * Admin paths outside `/admin/<name>` and `/admin/sim/<simulator>` that it served before the prefix rule and keeps
   * for the CLI and scripts (a path or a path prefix, matched on `/` boundaries). For the historic products only.
   */
  readonly historicAdminPaths?: readonly string[];
  // API paths (issue 43): its routes are under `/v1/<name>`; a route elsewhere fails the boot.
  /** API paths outside `/v1/<name>` it served before the prefix rule (a path or a path prefix). For the historic products only. */
  readonly historicApiPaths?: readonly string[];
  /**
   * API paths besides `/v1/<name>` that a new product owns by design: a prefix the spec names (`/v1/chat-sdk`) or a
   * public page (`/inbox`, `/chat-widget.js`). Each a path or a prefix, listed in docs/architecture.md's table.
   */
  readonly apiPaths?: readonly string[];
}

/** A simulator a module brings (issue 43): `ferry sim <name> …`. */
export interface SimulatorDeclaration {
  /** Its `ferry sim <name>` command and its admin controls' `/admin/sim/<name>`. */
  readonly name: string;
  readonly description: string;
  /** Historic (the SMSC simulator only): `ferry sim` itself runs it, so `cli` gets the `ferry sim` group, not `ferry sim <name>`. */
  readonly atSimRoot?: boolean;
  /** Fills `ferry sim <name>` (made by the CLI with the name and description): arguments and action, or subcommands. */
  readonly cli?: (sim: Command, ctx: CliContext) => void;
}
