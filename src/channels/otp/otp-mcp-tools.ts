import type { McpTool } from '../../platform/mcp-tool.js';

/** The OTP tool of the MCP server: requesting a code only; no tool verifies one (that is the end user's step). */
export const OTP_MCP_TOOLS: readonly McpTool[] = [
  {
    name: 'request_otp',
    product: 'otp',
    scope: 'otp:send',
    title: 'Send a one-time password',
    description:
      'Creates a one-time password for a phone and sends it by SMS (POST /v1/otp/request); `message` must contain {code}. ' +
      'Answers the OTP id, never the code. One active OTP per phone: a second request while one is active is ACTIVE_OTP_EXISTS, ' +
      'so a retry never sends a second code.',
    inputSchema: {
      type: 'object',
      required: ['phone', 'message'],
      additionalProperties: false,
      properties: {
        phone: { type: 'string', minLength: 1, maxLength: 32 },
        message: { type: 'string', minLength: 1, description: 'text template containing {code}; may contain {amount} and {duration}' },
        from: { type: 'string', minLength: 1, description: 'sender ID' },
        pinLength: { type: 'integer' },
        pinType: { type: 'string', enum: ['NUMERIC', 'ALPHANUMERIC', 'ALPHABETIC'] },
        expiry: {
          type: 'object',
          required: ['amount'],
          properties: { amount: { type: 'integer' }, duration: { type: 'string', enum: ['minutes', 'hours'] } },
        },
      },
    },
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    request: (body) => ({ method: 'POST', url: '/v1/otp/request', body }),
  },
];
