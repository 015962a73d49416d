import { idempotencyKeyArg, type McpTool } from '../../platform/mcp-tool.js';

const addresses = { type: 'array', minItems: 1, maxItems: 50, items: { type: 'string', minLength: 3, maxLength: 320 } } as const;

/** The email tools of the MCP server: send a message, read one with its events. */
export const EMAIL_MCP_TOOLS: readonly McpTool[] = [
  {
    name: 'send_email',
    product: 'email',
    scope: 'email:send',
    title: 'Send an email',
    description:
      'Sends an email (POST /v1/email/send): from an address of one of the account\'s sending domains, to up to 50 recipients, with ' +
      'subject and html and/or text, or templateId + data. Answers one messageId per recipient. Give idempotencyKey so a retry does not send twice.',
    inputSchema: {
      type: 'object',
      required: ['from', 'to'],
      additionalProperties: false,
      properties: {
        from: { type: 'string', minLength: 3, maxLength: 512, description: 'news@acme.example, or Acme <news@acme.example>' },
        fromName: { type: 'string', maxLength: 200 },
        to: addresses,
        cc: addresses,
        bcc: addresses,
        replyTo: { type: 'string', maxLength: 320 },
        subject: { type: 'string', maxLength: 998 },
        html: { type: 'string' },
        text: { type: 'string' },
        templateId: { type: 'string', maxLength: 64 },
        data: { type: 'object' },
        tags: { type: 'array', maxItems: 10, items: { type: 'string', maxLength: 100 } },
        stream: { type: 'string', enum: ['transactional', 'bulk'] },
        sendAt: { type: 'string', format: 'date-time' },
        idempotencyKey: idempotencyKeyArg,
      },
    },
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    request: ({ idempotencyKey, ...body }) => ({
      method: 'POST',
      url: '/v1/email/send',
      body,
      ...(typeof idempotencyKey === 'string' ? { idempotencyKey } : {}),
    }),
  },
  {
    name: 'get_email_message',
    product: 'email',
    scope: 'email:read',
    title: 'Email message',
    description: 'One email message with its status (queued, sent, delivered, deferred, bounced, dropped, complained, opened, clicked, unsubscribed) and event history (GET /v1/email/messages/{id}).',
    inputSchema: {
      type: 'object',
      required: ['messageId'],
      additionalProperties: false,
      properties: { messageId: { type: 'string', minLength: 1, maxLength: 64 } },
    },
    annotations: { readOnlyHint: true, openWorldHint: false },
    request: (a) => ({ method: 'GET', url: `/v1/email/messages/${encodeURIComponent(String(a.messageId))}` }),
  },
];
