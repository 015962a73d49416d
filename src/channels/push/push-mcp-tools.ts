import { idempotencyKeyArg, query, type McpTool } from '../../platform/mcp-tool.js';
import { notificationSchema, sendTargetSchema } from './send-routes.js';

/** The push tools of the MCP server: register a device, send a push, read a send. */
export const PUSH_MCP_TOOLS: readonly McpTool[] = [
  {
    name: 'register_push_device',
    product: 'push',
    scope: 'push:manage',
    title: 'Register a push device',
    description:
      'Registers (or updates) a device of one of the account\'s push apps by its FCM registration token or APNs device token, optionally for a user ' +
      '(POST /v1/push/devices). Registering the same token again updates it; a token that moves to another user moves.',
    inputSchema: {
      type: 'object',
      required: ['token', 'platform', 'appId'],
      additionalProperties: false,
      properties: {
        token: { type: 'string', minLength: 1, maxLength: 4096 },
        platform: { type: 'string', enum: ['android', 'ios', 'web'] },
        appId: { type: 'string', minLength: 1, maxLength: 100 },
        userId: { type: 'string', minLength: 1, maxLength: 200 },
        environment: { type: 'string', enum: ['sandbox', 'production'] },
        locale: { type: 'string', maxLength: 35 },
        timezone: { type: 'string', maxLength: 64 },
        tags: { type: 'array', maxItems: 50, items: { type: 'string', minLength: 1, maxLength: 100 } },
      },
    },
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    request: (a) => ({ method: 'POST', url: '/v1/push/devices', body: a }),
  },
  {
    name: 'send_push',
    product: 'push',
    scope: 'push:send',
    title: 'Send a push notification',
    description:
      'Sends a notification to exactly one of: a device (to.deviceId), every active device of a user (to.userId) or a topic (to.topic) ' +
      '(POST /v1/push/send). A single device answers with its outcome when the service answers quickly; a user or topic answers with pushId ' +
      'and the devices targeted: read it with get_push_send. Give idempotencyKey so a retry does not send twice.',
    inputSchema: {
      type: 'object',
      required: ['to'],
      additionalProperties: false,
      properties: {
        to: sendTargetSchema,
        notification: notificationSchema,
        data: { type: 'object', additionalProperties: { type: 'string' } },
        priority: { type: 'string', enum: ['high', 'normal'] },
        ttlSeconds: { type: 'integer', minimum: 0, maximum: 2_419_200 },
        collapseKey: { type: 'string', minLength: 1, maxLength: 64 },
        idempotencyKey: idempotencyKeyArg,
      },
    },
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    request: ({ idempotencyKey, ...body }) => ({
      method: 'POST',
      url: '/v1/push/send',
      body,
      ...(typeof idempotencyKey === 'string' ? { idempotencyKey } : {}),
    }),
  },
  {
    name: 'get_push_send',
    product: 'push',
    scope: 'push:send',
    title: 'A push send',
    description:
      'A send\'s status and counts (targeted, sent, failed, invalidated, pending) with its per-device outcomes: failed and invalidated devices, ' +
      'and for a device or user send each device that got it (GET /v1/push/sends/{pushId}); pass nextCursor as cursor for more outcomes.',
    inputSchema: {
      type: 'object',
      required: ['pushId'],
      additionalProperties: false,
      properties: {
        pushId: { type: 'string', minLength: 1, maxLength: 100 },
        status: { type: 'string', enum: ['sent', 'failed', 'invalidated'] },
        cursor: { type: 'string', maxLength: 100 },
        limit: { type: 'integer', minimum: 1, maximum: 1000 },
      },
    },
    annotations: { readOnlyHint: true, openWorldHint: false },
    request: (a) => ({ method: 'GET', url: `/v1/push/sends/${encodeURIComponent(String(a.pushId))}${query(a, ['status', 'cursor', 'limit'])}` }),
  },
];
