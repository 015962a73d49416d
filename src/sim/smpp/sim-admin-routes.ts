import type { FastifyInstance } from 'fastify';
import type { ReceivedMessage, SimulatorBehaviour, SmscSimulator } from './simulator.js';
import { ApiError } from '../../http/errors.js';
import { ok } from '../../http/envelope.js';

export interface SimAdminDeps {
  /** The embedded simulator, when this daemon runs one. */
  simulator: () => SmscSimulator | null;
}

/** One message as the handset would show it: concatenated parts joined once every part is in. */
export interface SimMessage {
  messageId: string;
  from: string;
  to: string[];
  text: string;
  parts: number;
  complete: boolean;
  receivedAt: string;
}

const query = {
  type: 'object',
  additionalProperties: false,
  properties: {
    to: { type: 'string', minLength: 1, maxLength: 21, pattern: '^\\+?[0-9]+$', description: 'only messages to this number (digits, international form)' },
    limit: { type: 'string', pattern: '^(?:[1-9][0-9]?|[1-4][0-9]{2}|500)$', description: 'at most this many, 1-500 (default 20)' },
  },
} as const;

const STAT = { type: 'string', enum: ['DELIVRD', 'UNDELIV', 'REJECTD', 'EXPIRED', 'DELETED', 'UNKNOWN', 'ACCEPTD'] } as const;
const ratio = { type: 'number', minimum: 0, maximum: 1 } as const;
const ms = { type: 'integer', minimum: 0, maximum: 600_000 } as const;

/** What an operator or a test may change in the embedded simulator at runtime (the rest would break its binds). */
export const behaviourPatchSchema = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    acceptLatencyMs: ms,
    receiptDelayMs: ms,
    receiptJitterMs: ms,
    outcomes: { type: 'object', minProperties: 1, propertyNames: STAT, additionalProperties: { type: 'number', minimum: 0 } },
    outcomeRules: {
      type: 'array',
      maxItems: 100,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['destination', 'stat'],
        properties: { destination: { type: 'string', pattern: '^\\+?[0-9]{1,20}\\*?$' }, stat: STAT },
      },
    },
    duplicateReceiptRatio: ratio,
    throttleRatio: ratio,
    neverRespond: { type: 'boolean' },
    redeliverReceipts: { type: 'boolean' },
    answerQueries: { type: 'boolean' },
  },
} as const;

/** Joins concatenated parts (by source, destinations and reference) and orders messages newest first. */
export function simMessages(received: readonly ReceivedMessage[], to: string | undefined, limit: number): SimMessage[] {
  const want = to?.replace(/^\+/, '');
  const out: SimMessage[] = [];
  const groups = new Map<string, { first: ReceivedMessage; parts: (string | undefined)[]; last: number }>();
  for (const m of received) {
    if (want !== undefined && !m.destinations.some((d) => d.replace(/^\+/, '') === want)) continue;
    if (!m.concat) {
      out.push({ messageId: m.messageId, from: m.source, to: m.destinations, text: m.text, parts: 1, complete: true, receivedAt: new Date(m.receivedAt).toISOString() });
      continue;
    }
    const key = `${m.source}\u0000${m.destinations.join(',')}\u0000${m.concat.reference}\u0000${m.concat.total}`;
    let g = groups.get(key);
    // A reference is reused after 256 messages: a part whose slot is taken starts a new message.
    if (g && g.parts[m.concat.seq - 1] !== undefined) {
      out.push(joined(g));
      g = undefined;
    }
    if (!g) {
      g = { first: m, parts: new Array<string | undefined>(m.concat.total).fill(undefined), last: m.receivedAt };
      groups.set(key, g);
    }
    g.parts[m.concat.seq - 1] = m.text;
    g.last = m.receivedAt;
    if (g.parts.every((p) => p !== undefined)) {
      out.push(joined(g));
      groups.delete(key);
    }
  }
  for (const g of groups.values()) out.push(joined(g));
  // Newest first; messages completed in the same millisecond keep the order they were completed in, reversed.
  return out
    .map((m, i) => ({ m, i }))
    .sort((a, b) => (a.m.receivedAt === b.m.receivedAt ? b.i - a.i : a.m.receivedAt < b.m.receivedAt ? 1 : -1))
    .slice(0, limit)
    .map(({ m }) => m);
}

function joined(g: { first: ReceivedMessage; parts: (string | undefined)[]; last: number }): SimMessage {
  const complete = g.parts.every((p) => p !== undefined);
  return {
    messageId: g.first.messageId,
    from: g.first.source,
    to: g.first.destinations,
    text: g.parts.map((p) => p ?? '').join(''),
    parts: g.parts.length,
    complete,
    receivedAt: new Date(g.last).toISOString(),
  };
}

/**
 * GET /admin/sim/messages: what the embedded SMSC simulator received, so a developer on the embedded default can
 * read an OTP code or check a text without a handset. Only the simulator's own traffic; nothing real is shown.
 */
export function registerSimRoutes(app: FastifyInstance, deps: SimAdminDeps): void {
  app.get<{ Querystring: { to?: string; limit?: string } }>('/admin/sim/messages', { schema: { querystring: query } }, async (req) => {
    const sim = runningSimulator(deps);
    return ok(req, 'SIM_MESSAGES', { messages: simMessages(sim.received(), req.query.to, req.query.limit ? Number(req.query.limit) : 20) });
  });

  // Scripting the embedded simulator: outcomes by recipient, latency, throttling, duplicate and reordered receipts.
  app.get('/admin/sim/behaviour', async (req) => ok(req, 'SIM_BEHAVIOUR', runningSimulator(deps).getBehaviour()));
  app.patch<{ Body: Partial<SimulatorBehaviour> }>('/admin/sim/behaviour', { schema: { body: behaviourPatchSchema } }, async (req) => {
    const sim = runningSimulator(deps);
    sim.setBehaviour(req.body);
    return ok(req, 'SIM_BEHAVIOUR', sim.getBehaviour(), 'Simulator behaviour changed');
  });
}

/** The embedded simulator, or SIMULATOR_NOT_RUNNING. */
export function runningSimulator(deps: SimAdminDeps): SmscSimulator {
  const sim = deps.simulator();
  if (!sim) throw new ApiError('SIMULATOR_NOT_RUNNING', { message: 'This daemon runs no embedded SMSC simulator (real upstreams are configured, or smpp.simulator.enabled is off)' });
  return sim;
}
