import { query, type McpTool } from '../../platform/mcp-tool.js';

/** The request-log tool of the MCP server. */
export const LOGS_MCP_TOOLS: readonly McpTool[] = [
  {
    name: 'search_logs',
    product: 'logs',
    scope: 'logs:read',
    title: 'Search the request logs',
    description:
      "The account's API requests, newest first (GET /v1/logs): filter by status class (4xx) or status, method, path prefix, " +
      'key, request id and time range; page with cursor (data.nextCursor).',
    inputSchema: {
      type: 'object',
      additionalProperties: false,
      properties: {
        status: { type: 'string', pattern: '^([1-5]xx|[1-5][0-9]{2})$' },
        method: { type: 'string', enum: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] },
        path: { type: 'string', minLength: 1, maxLength: 512 },
        keyId: { type: 'string' },
        requestId: { type: 'string' },
        from: { type: 'string', description: 'ISO 8601' },
        to: { type: 'string', description: 'ISO 8601' },
        cursor: { type: 'string' },
        limit: { type: 'integer', minimum: 1, maximum: 200 },
      },
    },
    annotations: { readOnlyHint: true, openWorldHint: false },
    request: (a) => ({ method: 'GET', url: `/v1/logs${query(a, ['status', 'method', 'path', 'keyId', 'requestId', 'from', 'to', 'cursor', 'limit'])}` }),
  },
];
