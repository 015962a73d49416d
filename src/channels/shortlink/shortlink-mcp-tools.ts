import { query, type McpTool } from '../../platform/mcp-tool.js';
import { ROLLUP_DIMS } from './click-recorder.js';

const utmField = { type: 'string', minLength: 1, maxLength: 200 } as const;

/** The short link tools of the MCP server: create a link, read links and their analytics. */
export const SHORTLINK_MCP_TOOLS: readonly McpTool[] = [
  {
    name: 'create_shortlink',
    product: 'shortlink',
    scope: 'shortlink:manage',
    title: 'Create a short link',
    description:
      'Creates a short link to an http(s) destination, with optional UTM parameters, expiry and click limit; answers its shortUrl ' +
      '(POST /v1/shortlink/links). Give externalId to make a retry safe: a second link with the same externalId is refused (EXTERNAL_ID_TAKEN).',
    inputSchema: {
      type: 'object',
      required: ['url'],
      additionalProperties: false,
      properties: {
        url: { type: 'string', minLength: 1, maxLength: 2048 },
        slug: { type: 'string', minLength: 1, maxLength: 64 },
        title: { type: 'string', maxLength: 200 },
        tags: { type: 'array', maxItems: 20, items: { type: 'string', minLength: 1, maxLength: 50 } },
        externalId: { type: 'string', minLength: 1, maxLength: 100 },
        utm: { type: 'object', additionalProperties: false, properties: { source: utmField, medium: utmField, campaign: utmField, term: utmField, content: utmField } },
        expiresAt: { type: 'string', format: 'date-time' },
        expiredUrl: { type: 'string', maxLength: 2048 },
        maxClicks: { type: 'integer', minimum: 1, maximum: 1_000_000_000 },
      },
    },
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    request: (a) => ({ method: 'POST', url: '/v1/shortlink/links', body: a }),
  },
  {
    name: 'list_shortlinks',
    product: 'shortlink',
    scope: 'shortlink:read',
    title: 'Short links',
    description: "The account's short links, newest first, by tag or text search (GET /v1/shortlink/links); pass nextCursor as cursor for more.",
    inputSchema: {
      type: 'object',
      additionalProperties: false,
      properties: {
        tag: { type: 'string', maxLength: 50 },
        search: { type: 'string', maxLength: 200 },
        cursor: { type: 'string', maxLength: 200 },
        limit: { type: 'integer', minimum: 1, maximum: 100 },
      },
    },
    annotations: { readOnlyHint: true, openWorldHint: false },
    request: (a) => ({ method: 'GET', url: `/v1/shortlink/links${query(a, ['tag', 'search', 'cursor', 'limit'])}` }),
  },
  {
    name: 'get_shortlink_analytics',
    product: 'shortlink',
    scope: 'shortlink:read',
    title: 'Short link analytics',
    description:
      'Clicks of one link (linkId) or of every link of the account, with a total, grouped by time (hour or day), country, device, browser, OS ' +
      'or referrer; bots and link previews left out unless includeBots (GET /v1/shortlink/links/{id}/analytics, /v1/shortlink/analytics).',
    inputSchema: {
      type: 'object',
      additionalProperties: false,
      properties: {
        linkId: { type: 'string', minLength: 1, maxLength: 100 },
        groupBy: { type: 'string', enum: ['time', ...ROLLUP_DIMS] },
        interval: { type: 'string', enum: ['hour', 'day'] },
        from: { type: 'string', format: 'date-time' },
        to: { type: 'string', format: 'date-time' },
        includeBots: { type: 'boolean' },
      },
    },
    annotations: { readOnlyHint: true, openWorldHint: false },
    request: (a) => ({
      method: 'GET',
      url: `${a.linkId ? `/v1/shortlink/links/${encodeURIComponent(String(a.linkId))}/analytics` : '/v1/shortlink/analytics'}${query(a, ['groupBy', 'interval', 'from', 'to', 'includeBots'])}`,
    }),
  },
];
