import { idempotencyKeyArg, type McpTool } from '../../platform/mcp-tool.js';

const MESSAGE_TYPES = ['text', 'image', 'video', 'audio', 'document', 'interactive', 'template'] as const;

/** The messenger tools of the MCP server: send a message, read its status. */
export const MESSENGER_MCP_TOOLS: readonly McpTool[] = [
  {
    name: 'send_messenger_message',
    product: 'messenger',
    scope: 'messenger:send',
    title: 'Send a messenger message',
    description:
      "Sends a chat-app message in the Cloud API's own shape (POST /v1/messenger/send): `type` and the object of that type, e.g. " +
      '{"type":"text","text":{"body":"Hi"}} or {"type":"template","template":{"name":"hello_world","language":"en_US"}}. Anything but a ' +
      'template needs the 24-hour window the user opened by writing (else WA003). Give idempotencyKey so a retry does not send twice.',
    inputSchema: {
      type: 'object',
      required: ['to', 'type'],
      additionalProperties: false,
      properties: {
        to: { type: 'string', minLength: 1, maxLength: 20, description: 'E.164 digits' },
        type: { type: 'string', enum: [...MESSAGE_TYPES] },
        reference: { type: 'string', maxLength: 128 },
        ...Object.fromEntries(MESSAGE_TYPES.map((t) => [t, { type: 'object', description: `the ${t} object (Cloud API field names)` }])),
        idempotencyKey: idempotencyKeyArg,
      },
    },
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    request: ({ idempotencyKey, ...body }) => ({
      method: 'POST',
      url: '/v1/messenger/send',
      body,
      ...(typeof idempotencyKey === 'string' ? { idempotencyKey } : {}),
    }),
  },
  {
    name: 'get_messenger_status',
    product: 'messenger',
    scope: 'messenger:read',
    title: 'Messenger message status',
    description: "A messenger message's status (accepted, sent, delivered, read or failed) with its history and error codes, by Ferry's id or by wamid (GET /v1/messenger/status/{messageId}).",
    inputSchema: {
      type: 'object',
      required: ['messageId'],
      additionalProperties: false,
      properties: { messageId: { type: 'string', minLength: 1, maxLength: 200 } },
    },
    annotations: { readOnlyHint: true, openWorldHint: false },
    request: (a) => ({ method: 'GET', url: `/v1/messenger/status/${encodeURIComponent(String(a.messageId))}` }),
  },
];
