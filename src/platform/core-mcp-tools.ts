import type { McpTool } from './mcp-tool.js';

/** Tools of the core API (not of a product module). */
export const CORE_MCP_TOOLS: readonly McpTool[] = [
  {
    name: 'get_balance',
    product: 'account',
    scope: 'account:read',
    title: 'Account balance',
    description: 'The account of this API key: its name, status, credit balance and currency (GET /v1/account/balance).',
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
    annotations: { readOnlyHint: true, openWorldHint: false },
    request: () => ({ method: 'GET', url: '/v1/account/balance' }),
  },
];
