import { idempotencyKeyArg, type McpTool } from '../../platform/mcp-tool.js';

/** The SMS tools of the MCP server: each is the REST endpoint of the same name (src/channels/sms/sms-routes.ts). */
export const SMS_MCP_TOOLS: readonly McpTool[] = [
  {
    name: 'send_sms',
    product: 'sms',
    scope: 'sms:send',
    title: 'Send an SMS',
    description:
      "Sends one SMS (POST /v1/sms/send) and answers its messageId; the recipient may be local (the account's country) or " +
      'international. It is charged to the account. Pass an idempotencyKey so that a retry never sends twice.',
    inputSchema: {
      type: 'object',
      required: ['to', 'from', 'message'],
      additionalProperties: false,
      properties: {
        to: { type: 'string', minLength: 1, maxLength: 32, description: 'recipient number' },
        from: { type: 'string', minLength: 1, description: 'sender ID (up to 11 letters and digits, or a number)' },
        message: { type: 'string', minLength: 1, description: 'the text' },
        reference: { type: 'string', maxLength: 100, description: 'your correlation id' },
        scheduledAt: { type: 'string', description: 'ISO 8601 time to send at' },
        idempotencyKey: idempotencyKeyArg,
      },
    },
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    request: ({ idempotencyKey, ...body }) => ({ method: 'POST', url: '/v1/sms/send', body, idempotencyKey: idempotencyKey as string | undefined }),
  },
  {
    name: 'send_bulk_sms',
    product: 'sms',
    scope: 'sms:send',
    title: 'Send SMS in bulk',
    description:
      'Sends one text to many recipients (`to`, `message`, `from`) or a list of `messages` (POST /v1/sms/bulk, up to 10,000); ' +
      'answers a batchId and the result of every item. Pass an idempotencyKey so that a retry never sends twice.',
    inputSchema: {
      type: 'object',
      additionalProperties: false,
      properties: {
        to: { type: 'array', minItems: 1, maxItems: 10000, items: { type: 'string' }, description: 'recipients of `message`' },
        message: { type: 'string', minLength: 1 },
        from: { type: 'string', minLength: 1 },
        messages: {
          type: 'array',
          minItems: 1,
          maxItems: 10000,
          items: {
            type: 'object',
            required: ['to', 'message'],
            properties: { to: { type: 'string' }, message: { type: 'string' }, from: { type: 'string' }, reference: { type: 'string' } },
          },
        },
        reference: { type: 'string', maxLength: 100 },
        idempotencyKey: idempotencyKeyArg,
      },
    },
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    request: ({ idempotencyKey, ...body }) => ({ method: 'POST', url: '/v1/sms/bulk', body, idempotencyKey: idempotencyKey as string | undefined }),
  },
  {
    name: 'get_sms_status',
    product: 'sms',
    scope: 'sms:read',
    title: 'SMS status',
    description: 'The status of one SMS by its messageId (GET /v1/sms/status/{messageId}): queued, sent, delivered, failed… with its history.',
    inputSchema: {
      type: 'object',
      required: ['messageId'],
      additionalProperties: false,
      properties: { messageId: { type: 'string', minLength: 1, maxLength: 200 } },
    },
    annotations: { readOnlyHint: true, openWorldHint: false },
    request: ({ messageId }) => ({ method: 'GET', url: `/v1/sms/status/${encodeURIComponent(String(messageId))}` }),
  },
];
