import { query, type McpTool } from '../../platform/mcp-tool.js';

/** The USSD tools of the MCP server: read sessions, and run a session against the account's own app. */
export const USSD_MCP_TOOLS: readonly McpTool[] = [
  {
    name: 'list_ussd_sessions',
    product: 'ussd',
    scope: 'ussd:read',
    title: 'USSD sessions',
    description: 'USSD sessions of the account, newest first, with how each ended (GET /v1/ussd/sessions); pass nextCursor as cursor for the next page.',
    inputSchema: {
      type: 'object',
      additionalProperties: false,
      properties: {
        status: { type: 'string', enum: ['active', 'ended'] },
        endStatus: { type: 'string', enum: ['Success', 'Incomplete', 'Failed'] },
        phone: { type: 'string', maxLength: 32 },
        serviceCode: { type: 'string', maxLength: 40 },
        channel: { type: 'string', enum: ['smpp', 'africastalking', 'hubtel', 'simulate'] },
        limit: { type: 'integer', minimum: 1, maximum: 200 },
        cursor: { type: 'string', maxLength: 64 },
      },
    },
    annotations: { readOnlyHint: true, openWorldHint: false },
    request: (a) => ({ method: 'GET', url: `/v1/ussd/sessions${query(a, ['status', 'endStatus', 'phone', 'serviceCode', 'channel', 'limit', 'cursor'])}` }),
  },
  {
    name: 'get_ussd_session',
    product: 'ussd',
    scope: 'ussd:read',
    title: 'USSD session transcript',
    description: 'One USSD session with its transcript: every screen sent and every input (GET /v1/ussd/sessions/{id}).',
    inputSchema: {
      type: 'object',
      required: ['sessionId'],
      additionalProperties: false,
      properties: { sessionId: { type: 'string', minLength: 1, maxLength: 64 } },
    },
    annotations: { readOnlyHint: true, openWorldHint: false },
    request: (a) => ({ method: 'GET', url: `/v1/ussd/sessions/${encodeURIComponent(String(a.sessionId))}` }),
  },
  {
    name: 'simulate_ussd_session',
    product: 'ussd',
    scope: 'ussd:manage',
    title: 'Try a USSD menu',
    description:
      "Dials one of the account's service codes from a phone number and answers each screen with the next input; returns every screen " +
      '(POST /v1/ussd/simulate). The session is stored and sends its events like a real one; nothing reaches a handset.',
    inputSchema: {
      type: 'object',
      required: ['serviceCode', 'phoneNumber'],
      additionalProperties: false,
      properties: {
        serviceCode: { type: 'string', minLength: 2, maxLength: 40 },
        phoneNumber: { type: 'string', minLength: 5, maxLength: 32 },
        inputs: { type: 'array', maxItems: 50, items: { type: 'string', maxLength: 182 } },
      },
    },
    annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: false },
    request: (a) => ({ method: 'POST', url: '/v1/ussd/simulate', body: { serviceCode: a.serviceCode, phoneNumber: a.phoneNumber, ...(a.inputs ? { inputs: a.inputs } : {}) } }),
  },
];
