import { idempotencyKeyArg, query, type McpTool } from '../../../platform/mcp-tool.js';
import { createAgentBody } from './agent-schemas.js';

/** The voice agent tools of the MCP server: create an agent, list the account's agents. */
export const AGENT_MCP_TOOLS: readonly McpTool[] = [
  {
    name: 'create_voice_agent',
    product: 'voice',
    scope: 'voice:agents',
    title: 'Create an AI voice agent',
    description:
      'Creates an agent that talks on phone calls (POST /v1/voice/agents): a name, a systemPrompt, a firstMessage said when the call is answered, a ' +
      'voice {locale, voiceId?} from the voices this server speaks, and either llm {provider: "openai-compatible", model, baseUrl, apiKey?} or relay ' +
      '{url: "wss://…"} for a model of your own. Tools: transfer (to configured destinations only, picked by name), end_call, webhook (your https ' +
      'endpoint with a JSON Schema of parameters), send_sms. Answers with agentId and version 1; keys are never shown back. Give idempotencyKey so a ' +
      'retry does not create two.',
    inputSchema: {
      type: 'object',
      required: [...createAgentBody.required],
      additionalProperties: false,
      properties: { ...createAgentBody.properties, idempotencyKey: idempotencyKeyArg },
    },
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    request: ({ idempotencyKey, ...body }) => ({ method: 'POST', url: '/v1/voice/agents', body, ...(typeof idempotencyKey === 'string' ? { idempotencyKey } : {}) }),
  },
  {
    name: 'list_voice_agents',
    product: 'voice',
    scope: 'voice:agents',
    title: 'List AI voice agents',
    description: "The account's voice agents at their current versions, newest first (GET /v1/voice/agents); nextCursor pages on.",
    inputSchema: {
      type: 'object',
      additionalProperties: false,
      properties: {
        name: { type: 'string', minLength: 1, maxLength: 200, description: 'only agents of exactly this name' },
        limit: { type: 'integer', minimum: 1, maximum: 100, description: 'default 50' },
        cursor: { type: 'string', maxLength: 200 },
      },
    },
    annotations: { readOnlyHint: true, openWorldHint: false },
    request: (a) => ({ method: 'GET', url: `/v1/voice/agents${query(a, ['name', 'limit', 'cursor'])}` }),
  },
];
