import type { FastifyInstance } from 'fastify';
import { envelopeSchema, ok } from '../../http/envelope.js';
import { ApiError } from '../../http/errors.js';
import { idempotencyHeaderSchema, idempotent, type IdempotencyStore } from '../../http/idempotency.js';
import type { SpeechVoice } from '../../speech/index.js';
import type { Call } from './call.js';
import { MAX_SAY_CHARS, MAX_SCRIPT_STEPS } from './call-script.js';
import { CALL_STATUSES, type CallStatus } from './call-status.js';
import { callView, callViewSchema } from './call-view.js';
import type { PlaceCallInput, VoiceService } from './voice-service.js';
import type { TranscriptLine } from './agents/transcript-store.js';

const TAG = ['voice'];
const err = (description: string) => ({ description, $ref: 'ErrorEnvelope#' });
const COMMON_ERRORS = {
  401: err('AUTH_HEADER_MISSING, AUTH_HEADER_MALFORMED, INVALID_CREDENTIALS'),
  403: err('INSUFFICIENT_SCOPE, ACCOUNT_SUSPENDED'),
  429: err('RATE_LIMITED'),
};

export const saySchema = {
  type: 'object',
  additionalProperties: false,
  required: ['text'],
  properties: {
    text: { type: 'string', minLength: 1, maxLength: MAX_SAY_CHARS, 'x-ferry-redact': 'personal' },
    locale: { type: 'string', pattern: '^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$', description: 'BCP 47, e.g. en-US, fr-FR, tw-GH (GET /v1/voice/voices lists what this server speaks)' },
    voice: { type: 'string', minLength: 1, maxLength: 100, description: 'a voice id from GET /v1/voice/voices (default: the best voice of the locale)' },
    loop: { type: 'integer', minimum: 1, maximum: 10, description: 'times to say it (default 1)' },
  },
} as const;
export const playSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['url'],
  properties: {
    url: { type: 'string', minLength: 1, maxLength: 2000, description: 'an https URL of a WAV file (PCM, μ-law or A-law, 8–48 kHz); fetched through the SSRF guard, size-capped' },
    loop: { type: 'integer', minimum: 1, maximum: 10 },
  },
} as const;
export const stepSchema = {
  type: 'object',
  minProperties: 1,
  maxProperties: 1,
  additionalProperties: false,
  description: 'exactly one of say, play, pause, gather, hangup',
  properties: {
    say: saySchema,
    play: playSchema,
    pause: { type: 'object', additionalProperties: false, required: ['seconds'], properties: { seconds: { type: 'number', minimum: 0.1, maximum: 60 } } },
    gather: {
      type: 'object',
      additionalProperties: false,
      description: 'plays its prompt, then collects DTMF keys (RFC 4733, or in-band) until `digits` keys, `finishOnKey`, or `timeoutMs` without a key',
      properties: {
        digits: { type: 'integer', minimum: 1, maximum: 64 },
        timeoutMs: { type: 'integer', minimum: 500, maximum: 60_000, description: 'default 5000' },
        finishOnKey: { type: 'string', pattern: '^[0-9*#]?$', description: "default '#'; '' for none" },
        prompt: { type: 'object', additionalProperties: false, properties: { say: saySchema, play: playSchema } },
      },
    },
    hangup: { type: 'object', additionalProperties: false, properties: {} },
  },
} as const;

const voiceSchema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    locale: { type: 'string' },
    alsoServes: { type: 'array', items: { type: 'string' } },
    name: { type: 'string' },
    gender: { type: ['string', 'null'] },
    engine: { type: 'string', description: 'espeak-ng (offline, on this server) or the id of a configured speech provider' },
    quality: { type: 'string', enum: ['robotic', 'natural'] },
  },
} as const;

/** POST/GET /v1/voice/calls, GET /v1/voice/calls/:callId, POST /v1/voice/calls/:callId/hangup, GET /v1/voice/voices. */
export async function voiceRoutes(
  app: FastifyInstance,
  deps: {
    service: VoiceService;
    idempotency: IdempotencyStore;
    voices: () => Promise<SpeechVoice[]>;
    callbackSecret: (accountId: string) => string;
    transcript: (callId: string) => Promise<TranscriptLine[]>;
  },
): Promise<void> {
  const { service } = deps;
  app.post<{ Body: PlaceCallInput }>(
    '/v1/voice/calls',
    {
      config: { scope: 'voice:calls' },
      schema: {
        tags: TAG,
        summary: 'Place an outbound call',
        description:
          'The call is stored `queued` and answered at once (202); an instance running the media role dials it through the SIP trunks in failover order. ' +
          'Give exactly one of `say` (text-to-speech), `play` (a WAV at an https URL) or `script` (up to ' +
          `${MAX_SCRIPT_STEPS} steps of say, play, pause, gather and hangup). The audio is prepared before the call rings anyone: a bad file or an unknown voice fails ` +
          'the call with the reason. `from` must be a number the account owns. Credit for `timeLimit` (default and cap: the server\'s voice.maxDurationSeconds) is ' +
          'held when the call is placed and settled at hang-up at the destination\'s per-minute price and billing increments; when the balance covers less, the ' +
          'call is cut at what it covers (error BALANCE_LIMIT), and when it covers not even the first increment the request is refused (INSUFFICIENT_CREDIT). ' +
          'Status changes are events (voice.call.*) and, when `statusCallback` is set, signed POSTs to it (webhook-id, webhook-timestamp, webhook-signature as ' +
          'webhooks, keyed with the account\'s voice callback secret) for the `statusCallbackEvents` asked (default completed). `machineDetection` is best effort. ' +
          'Send an Idempotency-Key to make a retry safe.',
        headers: { type: 'object', properties: { 'idempotency-key': idempotencyHeaderSchema } },
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['to', 'from'],
          properties: {
            to: { type: 'string', minLength: 3, maxLength: 20, description: 'E.164', 'x-ferry-redact': 'personal' },
            from: { type: 'string', minLength: 3, maxLength: 20, description: 'E.164: a number the account owns' },
            say: saySchema,
            play: playSchema,
            script: { type: 'array', minItems: 1, maxItems: MAX_SCRIPT_STEPS, items: stepSchema },
            statusCallback: { type: 'string', minLength: 1, maxLength: 2000, description: 'an https URL (SSRF guard)' },
            statusCallbackEvents: { type: 'array', uniqueItems: true, items: { type: 'string', enum: ['initiated', 'ringing', 'answered', 'completed'] } },
            timeoutSeconds: { type: 'integer', minimum: 5, maximum: 600, description: 'ring time before no-answer (default voice.ringTimeoutSeconds)' },
            timeLimit: { type: 'integer', minimum: 10, maximum: 86_400, description: 'the longest the call may last once answered, in seconds' },
            machineDetection: { type: 'string', enum: ['off', 'detect'], description: 'best effort: answeredBy is human, machine or unknown' },
            reference: { type: 'string', maxLength: 200 },
            agentId: { type: 'string', pattern: '^agent_[0-9a-z]{26}$', description: 'an AI voice agent talks on the call (docs/voice-agents.md) instead of say, play or script; the call keeps its current version' },
            variables: {
              type: 'object',
              maxProperties: 32,
              propertyNames: { pattern: '^[A-Za-z_][A-Za-z0-9_]{0,63}$' },
              additionalProperties: { type: 'string', maxLength: 500 },
              description: "values for the agent's {{placeholders}} in its system prompt and first message, over the agent's own",
              'x-ferry-redact': 'personal',
            },
          },
        },
        response: {
          202: envelopeSchema(callViewSchema, 'Accepted (code CALL_QUEUED)'),
          400: err('VALIDATION_ERROR, VOICE_NOT_AVAILABLE'),
          404: err('VOICE_AGENT_NOT_FOUND'),
          402: err('INSUFFICIENT_CREDIT'),
          403: err('CALLER_ID_NOT_ALLOWED, INSUFFICIENT_SCOPE, ACCOUNT_SUSPENDED'),
          401: COMMON_ERRORS[401],
          429: COMMON_ERRORS[429],
        },
      },
    },
    async (req, reply) => {
      reply.code(202);
      return idempotent(req, reply, deps.idempotency, async () => ok(req, 'CALL_QUEUED', callView(await service.place(req.auth.accountId, req.body))), 202);
    },
  );

  app.get<{ Querystring: { status?: CallStatus; to?: string; from?: string; limit?: string; cursor?: string } }>(
    '/v1/voice/calls',
    {
      config: { scope: 'voice:calls' },
      schema: {
        tags: TAG,
        summary: "The account's calls, newest first",
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            status: { type: 'string', enum: [...CALL_STATUSES] },
            to: { type: 'string', maxLength: 20 },
            from: { type: 'string', maxLength: 20 },
            limit: { type: 'string', pattern: '^[0-9]{1,3}$', description: '1–100, default 50' },
            cursor: { type: 'string', maxLength: 200 },
          },
        },
        response: { 200: envelopeSchema({ type: 'object', properties: { calls: { type: 'array', items: callViewSchema }, nextCursor: { type: ['string', 'null'] } } }), ...COMMON_ERRORS },
      },
    },
    async (req) => {
      const limit = req.query.limit === undefined ? 50 : Number(req.query.limit);
      if (limit < 1 || limit > 100) throw new ApiError('VALIDATION_ERROR', { data: { errors: [{ field: 'limit', message: '1–100' }] } });
      const before = decodeCursor(req.query.cursor);
      const digits = (s?: string) => (s === undefined ? undefined : s.replace(/^\+/, ''));
      const calls = await service.list(req.auth.accountId, { status: req.query.status, to: digits(req.query.to), from: digits(req.query.from), before }, limit + 1);
      const page = calls.slice(0, limit);
      return ok(req, 'CALLS', { calls: page.map(callView), nextCursor: calls.length > limit ? encodeCursor(page[page.length - 1]) : null });
    },
  );

  app.get<{ Params: { callId: string } }>(
    '/v1/voice/calls/:callId',
    {
      config: { scope: 'voice:calls' },
      schema: {
        tags: TAG,
        summary: 'A call: status, SIP code and reason, times, duration, digits gathered, trunk, cost, and its history',
        params: { type: 'object', required: ['callId'], properties: { callId: { type: 'string', minLength: 1, maxLength: 100 } } },
        response: {
          200: envelopeSchema({
            type: 'object',
            properties: {
              ...callViewSchema.properties,
              history: { type: 'array', items: { type: 'object', properties: { status: { type: 'string' }, at: { type: 'string', format: 'date-time' }, detail: { type: 'object', additionalProperties: true } } } },
            },
          }),
          404: err('CALL_NOT_FOUND'),
          ...COMMON_ERRORS,
        },
      },
    },
    async (req) => {
      const call = await service.get(req.auth.accountId, req.params.callId);
      const history = (await service.history(call.id)).map((h) => ({ status: h.status, at: h.at.toISOString(), detail: h.detail }));
      return ok(req, 'CALL', { ...callView(call), history });
    },
  );

  app.get<{ Params: { callId: string } }>(
    '/v1/voice/calls/:callId/transcript',
    {
      config: { scope: 'voice:calls' },
      schema: {
        tags: TAG,
        summary: "A call's transcript with an agent: what each side said, the tools the agent ran and their results, and each turn's latency",
        description:
          'Lines in order, stored as the conversation goes (readable while the call lasts). `role` is `agent` (spoken; `interrupted` when the caller cut in; ' +
          '`latency` on the first sentence of an answer: speech-to-text, model, synthesis and total milliseconds from the end of the caller\'s speech), `caller` ' +
          '(`source` speech or dtmf), `tool` (name, arguments, result, ok, ms) or `event` (transfer, failure, end …). A call without an agent has none.',
        params: { type: 'object', required: ['callId'], properties: { callId: { type: 'string', minLength: 1, maxLength: 100 } } },
        response: {
          200: envelopeSchema({
            type: 'object',
            properties: {
              callId: { type: 'string' },
              agentId: { type: ['string', 'null'] },
              agentVersion: { type: ['integer', 'null'] },
              lines: {
                type: 'array',
                items: {
                  type: 'object',
                  properties: {
                    seq: { type: 'integer' },
                    at: { type: 'string', format: 'date-time' },
                    role: { type: 'string', enum: ['agent', 'caller', 'tool', 'event'] },
                    text: { type: 'string', 'x-ferry-redact': 'personal' },
                    interrupted: { type: 'boolean' },
                    source: { type: 'string' },
                    sttMs: { type: 'integer' },
                    latency: { type: 'object', properties: { sttMs: { type: 'integer' }, brainMs: { type: 'integer' }, ttsMs: { type: 'integer' }, totalMs: { type: 'integer' } } },
                    tool: { type: 'object', additionalProperties: true, 'x-ferry-redact': 'personal' },
                    event: { type: 'string' },
                    detail: { type: 'object', additionalProperties: true },
                  },
                },
              },
            },
          }),
          404: err('CALL_NOT_FOUND'),
          ...COMMON_ERRORS,
        },
      },
    },
    async (req) => {
      const call = await service.get(req.auth.accountId, req.params.callId);
      const lines = (await deps.transcript(call.id)).map((l) => ({ seq: l.seq, at: l.at.toISOString(), ...l.entry }));
      return ok(req, 'CALL_TRANSCRIPT', { callId: call.id, agentId: call.agent?.id ?? null, agentVersion: call.agent?.version ?? null, lines });
    },
  );

  app.post<{ Params: { callId: string } }>(
    '/v1/voice/calls/:callId/hangup',
    {
      config: { scope: 'voice:calls' },
      schema: {
        tags: TAG,
        summary: 'Hang up a call',
        description:
          'A call not dialled yet ends `canceled` at once (200). A ringing call is canceled (SIP CANCEL) and an answered one hung up (BYE) by the instance carrying ' +
          'it, which any instance reaches: the answer (202) has `hangupRequested: true` and the status as it was; the final status follows in moments.',
        params: { type: 'object', required: ['callId'], properties: { callId: { type: 'string', minLength: 1, maxLength: 100 } } },
        response: {
          200: envelopeSchema(callViewSchema, 'Canceled before it was dialled (code CALL_CANCELED)'),
          202: envelopeSchema(callViewSchema, 'The owner hangs up (code CALL_HANGUP_REQUESTED)'),
          404: err('CALL_NOT_FOUND'),
          409: err('CALL_ALREADY_ENDED'),
          ...COMMON_ERRORS,
        },
      },
    },
    async (req, reply) => {
      const call = await service.hangup(req.auth.accountId, req.params.callId);
      if (call.status === 'canceled') return ok(req, 'CALL_CANCELED', callView(call));
      reply.code(202);
      return ok(req, 'CALL_HANGUP_REQUESTED', callView(call));
    },
  );

  app.get(
    '/v1/voice/settings',
    {
      config: { scope: 'voice:calls' },
      schema: {
        tags: TAG,
        summary: "The account's voice settings: the secret status callbacks are signed with",
        description:
          'Status callbacks carry webhook-id, webhook-timestamp and webhook-signature (`v1,<base64 HMAC-SHA256(key, "<webhook-id>.<webhook-timestamp>.<body>")>`, ' +
          'the key being the base64 after `whsec_`), as webhooks do. webhook-id stays the same when a callback is retried.',
        response: { 200: envelopeSchema({ type: 'object', properties: { callbackSigningSecret: { type: 'string' } } }), ...COMMON_ERRORS },
      },
    },
    async (req) => ok(req, 'VOICE_SETTINGS', { callbackSigningSecret: deps.callbackSecret(req.auth.accountId) }),
  );

  app.get(
    '/v1/voice/voices',
    {
      config: { scope: 'voice:calls' },
      schema: {
        tags: TAG,
        summary: 'The voices and locales this server speaks, with the engine serving each and how well',
        description:
          'espeak-ng voices are synthesized on this server, offline (robotic but clear). Locales espeak-ng has no voice for (Twi tw-GH, Ewe ee-GH) are listed only ' +
          'when a speech provider serving them is configured (voice.tts.providers), under that provider\'s id; no other language\'s voice stands in for them.',
        response: { 200: envelopeSchema({ type: 'object', properties: { voices: { type: 'array', items: voiceSchema } } }), ...COMMON_ERRORS },
      },
    },
    async (req) => ok(req, 'VOICES', { voices: await deps.voices() }),
  );
}

function encodeCursor(c: Call): string {
  return c.id;
}

function decodeCursor(raw: string | undefined): string | undefined {
  if (!raw) return undefined;
  if (!/^call_[0-9a-z]{26}$/.test(raw)) throw new ApiError('VALIDATION_ERROR', { data: { errors: [{ field: 'cursor', message: 'not a cursor this API gave' }] } });
  return raw;
}
