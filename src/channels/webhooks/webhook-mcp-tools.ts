import { query, type McpTool } from '../../platform/mcp-tool.js';

/** The webhook tool of the MCP server (read-only). */
export const WEBHOOK_MCP_TOOLS: readonly McpTool[] = [
  {
    name: 'list_webhook_deliveries',
    product: 'webhooks',
    scope: 'webhooks:manage',
    title: 'Webhook deliveries',
    description: 'The delivery attempts of one webhook endpoint, newest first, with their status and last error (GET /v1/webhooks/{id}/deliveries).',
    inputSchema: {
      type: 'object',
      required: ['webhookId'],
      additionalProperties: false,
      properties: {
        webhookId: { type: 'string', minLength: 1, maxLength: 200 },
        status: { type: 'string', enum: ['pending', 'failed', 'delivered', 'dead'] },
      },
    },
    annotations: { readOnlyHint: true, openWorldHint: false },
    request: (a) => ({ method: 'GET', url: `/v1/webhooks/${encodeURIComponent(String(a.webhookId))}/deliveries${query(a, ['status'])}` }),
  },
];
