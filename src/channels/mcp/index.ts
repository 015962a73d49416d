import type { ChannelModule } from '../../platform/channel-module.js';
import { listOf, mcpConfigSchema, type McpConfig } from './config.js';
import { MCP_ERRORS } from './errors.js';
import { mcpRoutes } from './mcp-routes.js';

/**
 * The MCP server for AI agents at /mcp (docs/mcp.md): one tool per REST endpoint, from the core and from every running
 * module's `mcpTools`, each called through the REST route it names so scopes, limits and logs apply as to any caller.
 */
export const mcpModule: ChannelModule<null> = {
  name: 'mcp',
  maturity: 'beta',
  tag: { name: 'mcp', description: 'The MCP server for AI agents (/mcp): the REST endpoints as tools' },
  config: { key: 'mcp', schema: mcpConfigSchema },
  errors: MCP_ERRORS,
  // Its endpoint predates the /v1/<name> rule: agents are configured with <publicUrl>/mcp.
  historicApiPaths: ['/mcp'],
  async create(ctx) {
    const cfg = ctx.section<McpConfig>();
    return {
      service: null,
      async routes(app) {
        if (!cfg.enabled) return;
        // Routes are registered after every module is created, so every module's tools are known here.
        await app.register(mcpRoutes, {
          tools: ctx.mcpTools(),
          allowedHosts: listOf(cfg.allowedHosts),
          allowedOrigins: listOf(cfg.allowedOrigins),
          publicUrl: ctx.config.http.publicUrl,
        });
      },
    };
  },
};
