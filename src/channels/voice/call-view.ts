import { fromMicros } from '../../accounts/money.js';
import type { Call } from './call.js';

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** A call as the API, events and status callbacks show it. */
export function callView(c: Call) {
  const duration = c.answeredAt && c.endedAt ? Math.max(0, Math.round((c.endedAt.getTime() - c.answeredAt.getTime()) / 1000)) : null;
  return {
    callId: c.id,
    status: c.status,
    // 'outbound-api' (Twilio's word, shown since the first release) stays the value of a call Ferry placed.
    direction: c.direction === 'inbound' ? ('inbound' as const) : ('outbound-api' as const),
    to: '+' + c.to,
    from: '+' + c.from,
    reference: c.reference,
    trunk: c.trunk,
    sipCode: c.sipCode,
    sipReason: c.sipReason,
    error: c.errorCode ? { code: c.errorCode, message: c.errorReason } : null,
    digits: c.digits,
    answeredBy: c.answeredBy,
    timeoutSeconds: c.ringTimeoutSeconds,
    timeLimit: c.timeLimitSeconds,
    hangupRequested: c.hangupRequested,
    createdAt: c.createdAt.toISOString(),
    initiatedAt: iso(c.initiatedAt),
    ringingAt: iso(c.ringingAt),
    answeredAt: iso(c.answeredAt),
    endedAt: iso(c.endedAt),
    duration,
    billableSeconds: c.billableSeconds,
    pricePerMinute: fromMicros(c.pricePerMinuteMicros),
    cost: c.costMicros === null ? null : fromMicros(c.costMicros),
    agentId: c.agent?.id ?? null,
    agentVersion: c.agent?.version ?? null,
  };
}

export type CallView = ReturnType<typeof callView>;

/** The OpenAPI schema of callView (the response serializer keeps exactly these fields). */
export const callViewSchema = {
  type: 'object',
  properties: {
    agentId: { type: ['string', 'null'], description: 'the AI voice agent talking on the call (prefix agent_), or null for a scripted call' },
    agentVersion: { type: ['integer', 'null'], description: 'the version of the agent the call talks with (fixed when the call was placed)' },
    callId: { type: 'string', description: 'prefix call_' },
    status: { type: 'string', enum: ['queued', 'initiated', 'ringing', 'in-progress', 'completed', 'busy', 'no-answer', 'failed', 'canceled'] },
    direction: {
      type: 'string',
      enum: ['outbound-api', 'inbound'],
      description: "outbound-api: placed by Ferry (POST /v1/voice/calls, the browser dialer); inbound: a call to one of the account's numbers, answered by the voice agent routed to it (PUT /v1/voice/numbers/{number})",
    },
    to: { type: 'string' },
    from: { type: 'string' },
    reference: { type: ['string', 'null'] },
    trunk: { type: ['string', 'null'], description: 'the SIP trunk that carried (or last tried) the call' },
    sipCode: { type: ['integer', 'null'], description: "the trunk's final SIP response (200 once answered), or null" },
    sipReason: { type: ['string', 'null'] },
    error: { type: ['object', 'null'], properties: { code: { type: 'string' }, message: { type: ['string', 'null'] } }, description: 'why a call failed or was cut, when Ferry knows more than the SIP code' },
    digits: { type: 'string', description: 'DTMF digits gathered, in order (gather steps)' },
    answeredBy: { type: ['string', 'null'], description: 'machineDetection (best effort): human, machine or unknown' },
    timeoutSeconds: { type: 'integer', description: 'ring time' },
    timeLimit: { type: 'integer', description: 'the longest the call may last once answered (credit was held for it)' },
    hangupRequested: { type: 'boolean' },
    createdAt: { type: 'string', format: 'date-time' },
    initiatedAt: { type: ['string', 'null'], format: 'date-time' },
    ringingAt: { type: ['string', 'null'], format: 'date-time' },
    answeredAt: { type: ['string', 'null'], format: 'date-time' },
    endedAt: { type: ['string', 'null'], format: 'date-time' },
    duration: { type: ['integer', 'null'], description: 'seconds from answer to hang-up' },
    billableSeconds: { type: ['integer', 'null'], description: 'seconds billed (the billing increments applied), once ended' },
    pricePerMinute: { type: 'number', description: 'in the account currency, for this destination' },
    cost: { type: ['number', 'null'], description: 'charged, once ended' },
  },
} as const;
