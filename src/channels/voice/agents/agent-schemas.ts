import {
  LOCALE_PATTERN,
  MAX_DESTINATIONS,
  MAX_TOOLS,
  MAX_WEBHOOK_TIMEOUT_MS,
  TOOL_NAME_PATTERN,
  VARIABLE_NAME_PATTERN,
} from './agent-config.js';
import type { AgentRecord } from './agent-store.js';

/**
 * The JSON schemas of /v1/voice/agents: request bodies (shapes only; the rules across fields are agent-config.ts's)
 * and the agent as answered. They drive validation, serialization, request-log redaction and the OpenAPI description.
 */

const failureThen = {
  description: "what follows the apology: 'hangup', or { transfer: <a destination name of a transfer tool> }",
  anyOf: [
    { type: 'string', enum: ['hangup'] },
    { type: 'object', additionalProperties: false, required: ['transfer'], properties: { transfer: { type: 'string', pattern: TOOL_NAME_PATTERN } } },
  ],
} as const;

const destinationSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'description', 'target'],
  properties: {
    name: { type: 'string', pattern: TOOL_NAME_PATTERN, description: 'what the model picks (it never sees nor gives the target)' },
    description: { type: 'string', minLength: 1, maxLength: 500, description: 'when to choose it, for the model' },
    target: { type: 'string', minLength: 1, maxLength: 300, description: 'an E.164 number (+14155550100) or a sip:/sips: URI' },
  },
} as const;

const toolSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['type'],
  description:
    'transfer {name, description, destinations, mode}; end_call {name?, description?}; webhook {name, description, url, parameters, timeoutMs?}; ' +
    'send_sms {name?, description?, from?}. A field of another type is refused (VOICE_AGENT_INVALID).',
  properties: {
    type: { type: 'string', enum: ['transfer', 'end_call', 'webhook', 'send_sms'] },
    name: { type: 'string', pattern: TOOL_NAME_PATTERN, description: 'the function name the model calls, unique in the agent (default end_call, send_sms for those types)' },
    description: { type: 'string', minLength: 1, maxLength: 1000, description: 'when to use it, for the model' },
    destinations: { type: 'array', minItems: 1, maxItems: MAX_DESTINATIONS, items: destinationSchema, description: 'transfer: the only places a call may be transferred to' },
    mode: { type: 'string', enum: ['blind', 'warm'], description: 'transfer: blind (SIP REFER, bridged when refused) or warm (the human hears a summary first); default blind' },
    url: { type: 'string', minLength: 1, maxLength: 2000, description: 'webhook: an https URL, POSTed the arguments (signed as webhooks are; SSRF guard at each call)' },
    parameters: { type: 'object', additionalProperties: true, description: 'webhook: the JSON Schema (draft-07, type object) of the arguments, at most 16 kB' },
    timeoutMs: { type: 'integer', minimum: 500, maximum: MAX_WEBHOOK_TIMEOUT_MS, description: 'webhook: default 5000' },
    from: { type: 'string', minLength: 1, maxLength: 20, description: "send_sms: the sender (a number or sender ID the account's SMS may use); default the call's number" },
  },
} as const;

const llmSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['provider', 'model', 'baseUrl'],
  description: 'a model Ferry calls: any OpenAI-compatible chat-completions endpoint (exactly one of llm and relay)',
  properties: {
    provider: { type: 'string', enum: ['openai-compatible'] },
    model: { type: 'string', minLength: 1, maxLength: 200 },
    baseUrl: { type: 'string', minLength: 1, maxLength: 2000, description: 'the API root, e.g. https://api.openai.com/v1 (POST {baseUrl}/chat/completions)' },
    apiKey: { type: ['string', 'null'], minLength: 1, maxLength: 4000, 'x-ferry-redact': 'secret', description: 'sent as a bearer token; sealed at rest, never returned (apiKeySet says whether there is one)' },
    temperature: { type: ['number', 'null'], minimum: 0, maximum: 2 },
    maxTokens: { type: ['integer', 'null'], minimum: 1, maximum: 32_768 },
  },
} as const;

const sttSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['provider'],
  description: 'speech-to-text: pocketsphinx on this server (the default), or an OpenAI-compatible transcription endpoint',
  properties: {
    provider: { type: 'string', enum: ['pocketsphinx', 'openai-compatible'] },
    model: { type: ['string', 'null'], minLength: 1, maxLength: 200 },
    baseUrl: { type: ['string', 'null'], minLength: 1, maxLength: 2000 },
    apiKey: { type: ['string', 'null'], minLength: 1, maxLength: 4000, 'x-ferry-redact': 'secret', description: 'sealed at rest, never returned' },
  },
} as const;

/** The members of a create body (PATCH takes them all, each nullable). */
const agentProperties = {
  name: { type: 'string', minLength: 1, maxLength: 200 },
  systemPrompt: { type: 'string', minLength: 1, maxLength: 32_000, 'x-ferry-redact': 'personal', description: 'required with llm; {{variable}} placeholders are filled in per call' },
  firstMessage: { type: 'string', minLength: 1, maxLength: 2000, 'x-ferry-redact': 'personal', description: 'said the moment the call is answered; {{variable}} placeholders allowed' },
  voice: {
    type: 'object',
    additionalProperties: false,
    required: ['locale'],
    description: 'checked against GET /v1/voice/voices (VOICE_NOT_AVAILABLE); without voiceId, the best voice of the locale at call time',
    properties: {
      locale: { type: 'string', pattern: LOCALE_PATTERN, maxLength: 35, description: 'BCP 47, e.g. en-US' },
      voiceId: { type: ['string', 'null'], minLength: 1, maxLength: 100 },
    },
  },
  language: { type: 'string', pattern: LOCALE_PATTERN, maxLength: 35, description: "BCP 47: what the caller speaks (default the voice's locale)" },
  llm: llmSchema,
  relay: {
    type: 'object',
    additionalProperties: false,
    required: ['url'],
    description: 'your own model over a WebSocket (the relay protocol, docs/voice-agents.md); exactly one of llm and relay',
    properties: { url: { type: 'string', minLength: 1, maxLength: 2000, description: 'a wss:// URL' } },
  },
  stt: sttSchema,
  tools: { type: 'array', maxItems: MAX_TOOLS, items: toolSchema },
  maxDurationSeconds: { type: 'integer', minimum: 10, maximum: 86_400, description: "the call ends after this long (default 600, at most the server's voice.maxDurationSeconds)" },
  silenceTimeoutSeconds: { type: 'integer', minimum: 5, maximum: 3600, description: 'the call ends after this long with nobody speaking (default 30)' },
  endCallPhrases: { type: 'array', maxItems: 20, items: { type: 'string', minLength: 1, maxLength: 200 }, 'x-ferry-redact': 'personal', description: 'the agent hangs up after saying one of these' },
  failure: {
    type: 'object',
    additionalProperties: false,
    description: 'when the model or speech-to-text fails or times out: the apology said, then hang up or transfer',
    properties: { message: { type: 'string', minLength: 1, maxLength: 1000, 'x-ferry-redact': 'personal' }, then: failureThen },
  },
  variables: {
    type: 'object',
    maxProperties: 50,
    propertyNames: { pattern: VARIABLE_NAME_PATTERN },
    additionalProperties: { type: 'string', maxLength: 1000 },
    'x-ferry-redact': 'personal',
    description: 'defaults of the {{name}} placeholders; a call may give its own',
  },
  metadata: { type: 'object', additionalProperties: true, description: 'yours, returned as given (at most 4 kB)' },
} as const;

export const createAgentBody = { type: 'object', additionalProperties: false, required: ['name'], properties: agentProperties } as const;

/**
 * PATCH: a JSON merge patch (RFC 7396). Objects merge member by member (llm, stt, voice, failure, variables,
 * metadata), null removes a member (back to its default), arrays (tools, endCallPhrases) replace.
 */
export const patchAgentBody = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: Object.fromEntries(
    Object.entries(agentProperties).map(([k, s]) => {
      if (k === 'name') return [k, s];
      const { required: _required, ...rest } = s as { required?: unknown; type: string };
      return [k, { ...rest, type: [rest.type, 'null'] }];
    }),
  ),
} as const;

const toolView = {
  type: 'object',
  properties: {
    type: { type: 'string' },
    name: { type: 'string' },
    description: { type: 'string' },
    destinations: { type: 'array', items: { type: 'object', properties: { name: { type: 'string' }, description: { type: 'string' }, target: { type: 'string' } } } },
    mode: { type: 'string' },
    url: { type: 'string' },
    parameters: { type: 'object', additionalProperties: true },
    timeoutMs: { type: 'integer' },
    from: { type: ['string', 'null'] },
  },
} as const;

export const agentViewSchema = {
  type: 'object',
  properties: {
    agentId: { type: 'string' },
    name: { type: 'string' },
    version: { type: 'integer', description: 'the version shown' },
    currentVersion: { type: 'integer', description: 'the version new calls start with' },
    systemPrompt: { type: ['string', 'null'] },
    firstMessage: { type: ['string', 'null'] },
    voice: { type: 'object', properties: { locale: { type: 'string' }, voiceId: { type: ['string', 'null'] } } },
    language: { type: 'string' },
    llm: {
      type: ['object', 'null'],
      properties: {
        provider: { type: 'string' },
        model: { type: 'string' },
        baseUrl: { type: 'string' },
        apiKeySet: { type: 'boolean' },
        temperature: { type: ['number', 'null'] },
        maxTokens: { type: ['integer', 'null'] },
      },
    },
    relay: { type: ['object', 'null'], properties: { url: { type: 'string' } } },
    stt: { type: 'object', properties: { provider: { type: 'string' }, model: { type: ['string', 'null'] }, baseUrl: { type: ['string', 'null'] }, apiKeySet: { type: 'boolean' } } },
    tools: { type: 'array', items: toolView },
    maxDurationSeconds: { type: 'integer' },
    silenceTimeoutSeconds: { type: 'integer' },
    endCallPhrases: { type: 'array', items: { type: 'string' } },
    failure: { type: 'object', properties: { message: { type: 'string' }, then: failureThen } },
    variables: { type: 'object', additionalProperties: { type: 'string' } },
    metadata: { type: 'object', additionalProperties: true },
    createdAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time', description: 'when the current version was made, or the agent deleted' },
    versionCreatedAt: { type: 'string', format: 'date-time', description: 'when the version shown was made' },
  },
} as const;

/** An agent version as the API shows it: never a key, only whether one is set. */
export function agentView(a: AgentRecord) {
  const c = a.config;
  return {
    agentId: a.id,
    name: c.name,
    version: a.version,
    currentVersion: a.currentVersion,
    systemPrompt: c.systemPrompt,
    firstMessage: c.firstMessage,
    voice: c.voice,
    language: c.language,
    llm: c.llm && { provider: c.llm.provider, model: c.llm.model, baseUrl: c.llm.baseUrl, apiKeySet: a.llmKeySet, temperature: c.llm.temperature, maxTokens: c.llm.maxTokens },
    relay: c.relay,
    stt: { provider: c.stt.provider, model: c.stt.model, baseUrl: c.stt.baseUrl, apiKeySet: a.sttKeySet },
    tools: c.tools,
    maxDurationSeconds: c.maxDurationSeconds,
    silenceTimeoutSeconds: c.silenceTimeoutSeconds,
    endCallPhrases: c.endCallPhrases,
    failure: c.failure,
    variables: c.variables,
    metadata: c.metadata,
    createdAt: a.createdAt.toISOString(),
    updatedAt: a.updatedAt.toISOString(),
    versionCreatedAt: a.versionCreatedAt.toISOString(),
  };
}
