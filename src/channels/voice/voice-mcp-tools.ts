import { idempotencyKeyArg, type McpTool } from '../../platform/mcp-tool.js';
import { MAX_SCRIPT_STEPS } from './call-script.js';
import { playSchema, saySchema, stepSchema } from './voice-routes.js';

/** The voice tools of the MCP server: place a call, read one, hang one up. */
export const VOICE_MCP_TOOLS: readonly McpTool[] = [
  {
    name: 'place_call',
    product: 'voice',
    scope: 'voice:calls',
    title: 'Place a voice call',
    description:
      'Calls a phone number from a number the account owns and, once answered, says a text (say), plays a WAV file (play), runs a short script ' +
      'of say, play, pause, gather (DTMF keys) and hangup steps, or lets an AI voice agent talk (agentId, with its variables) (POST /v1/voice/calls). Answers at once with callId and status queued: follow ' +
      'it with get_call. Credit for the longest duration is held and settled at hang-up. Give idempotencyKey so a retry does not call twice.',
    inputSchema: {
      type: 'object',
      required: ['to', 'from'],
      additionalProperties: false,
      properties: {
        to: { type: 'string', minLength: 3, maxLength: 20, description: 'E.164' },
        from: { type: 'string', minLength: 3, maxLength: 20, description: 'E.164, a number the account owns' },
        say: saySchema,
        play: playSchema,
        script: { type: 'array', minItems: 1, maxItems: MAX_SCRIPT_STEPS, items: stepSchema },
        timeoutSeconds: { type: 'integer', minimum: 5, maximum: 600 },
        timeLimit: { type: 'integer', minimum: 10, maximum: 86_400 },
        reference: { type: 'string', maxLength: 200 },
        agentId: { type: 'string', pattern: '^agent_[0-9a-z]{26}$', description: 'an AI voice agent (create_voice_agent) talks on the call instead of say, play or script' },
        variables: { type: 'object', maxProperties: 32, additionalProperties: { type: 'string', maxLength: 500 }, description: "values for the agent's {{placeholders}}" },
        idempotencyKey: idempotencyKeyArg,
      },
    },
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    request: ({ idempotencyKey, ...body }) => ({ method: 'POST', url: '/v1/voice/calls', body, ...(typeof idempotencyKey === 'string' ? { idempotencyKey } : {}) }),
  },
  {
    name: 'get_call',
    product: 'voice',
    scope: 'voice:calls',
    title: 'A voice call',
    description: "A call's status, SIP code and reason, times, duration, digits gathered, trunk, cost and history (GET /v1/voice/calls/{callId}).",
    inputSchema: { type: 'object', required: ['callId'], additionalProperties: false, properties: { callId: { type: 'string', minLength: 1, maxLength: 100 } } },
    annotations: { readOnlyHint: true, openWorldHint: false },
    request: (a) => ({ method: 'GET', url: `/v1/voice/calls/${encodeURIComponent(String(a.callId))}` }),
  },
  {
    name: 'hangup_call',
    product: 'voice',
    scope: 'voice:calls',
    title: 'Hang up a voice call',
    description: 'Cancels a call not yet answered or hangs up an answered one (POST /v1/voice/calls/{callId}/hangup); the final status follows in moments.',
    inputSchema: { type: 'object', required: ['callId'], additionalProperties: false, properties: { callId: { type: 'string', minLength: 1, maxLength: 100 } } },
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true },
    request: (a) => ({ method: 'POST', url: `/v1/voice/calls/${encodeURIComponent(String(a.callId))}/hangup` }),
  },
];
