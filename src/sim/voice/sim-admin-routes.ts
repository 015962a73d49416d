import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { SimVoiceCall } from './sim-voice-call.js';
import type { VoiceTrunkSimulator } from './trunk-simulator.js';

export interface VoiceSimAdminDeps {
  /** The embedded trunk simulator, when this daemon runs one. */
  simulator: () => VoiceTrunkSimulator | null;
}

/** A call as the admin API and `ferry sim voice calls` show it: no audio bytes, times in ISO 8601, -Infinity as null. */
export interface SimVoiceCallView {
  id: string;
  callId: string;
  from: string;
  to: string;
  transport: string;
  behaviour: string;
  state: string;
  codec: string | null;
  status: number | null;
  startedAt: string;
  answeredAt: string | null;
  endedAt: string | null;
  endedBy: 'caller' | 'trunk' | null;
  digitsReceived: string;
  digitsSent: string;
  audio: { seconds: number; rmsDbfs: number | null; nonSilentShare: number; dominantFrequencyHz: number; kept: boolean } | null;
  transfer: { to: string; status: number | null } | null;
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

export function simVoiceCallView(c: SimVoiceCall): SimVoiceCallView {
  const a = c.audio;
  return {
    id: c.id,
    callId: c.callId,
    from: c.from,
    to: c.to,
    transport: c.transport,
    behaviour: c.behaviour,
    state: c.state,
    codec: c.codec,
    status: c.status,
    startedAt: new Date(c.startedAt).toISOString(),
    answeredAt: iso(c.answeredAt),
    endedAt: iso(c.endedAt),
    endedBy: c.endedBy,
    digitsReceived: c.digitsReceived,
    digitsSent: c.digitsSent,
    transfer: c.transfer && { ...c.transfer },
    audio: a && { seconds: a.seconds, rmsDbfs: Number.isFinite(a.rmsDbfs) ? a.rmsDbfs : null, nonSilentShare: a.nonSilentShare, dominantFrequencyHz: a.dominantFrequencyHz, kept: a.kept },
  };
}

const NOT_RUNNING = 'The SIP trunk simulator does not run in this daemon (voice.simulator)';
const idParams = { type: 'object', required: ['id'], properties: { id: { type: 'string', minLength: 1, maxLength: 40 } } } as const;
const listQuery = { type: 'object', properties: { limit: { type: 'integer', minimum: 1, maximum: 200, default: 50 } } } as const;
const digitsBody = {
  type: 'object',
  additionalProperties: false,
  required: ['digits'],
  properties: { digits: { type: 'string', minLength: 1, maxLength: 32, pattern: '^[0-9*#A-Da-d]+$' } },
} as const;

function fail(reply: FastifyReply, req: FastifyRequest, status: number, code: string, message: string) {
  return reply.code(status).send({ success: false, code, message, requestId: req.id });
}

/**
 * `/admin/sim/voice/calls…`: the embedded trunk simulator's calls (newest first), a call's received audio as WAV, and
 * the trunk's side of a live call (hang up, send DTMF). 404 when the simulator does not run or the call is unknown.
 */
export async function simAdminRoutes(app: FastifyInstance, deps: VoiceSimAdminDeps): Promise<void> {
  /** The simulator and the call, or the 404 already sent. */
  const find = (req: FastifyRequest<{ Params: { id: string } }>, reply: FastifyReply) => {
    const sim = deps.simulator();
    if (!sim) return void fail(reply, req, 404, 'NOT_FOUND', NOT_RUNNING);
    const call = sim.call(req.params.id);
    if (!call) return void fail(reply, req, 404, 'NOT_FOUND', `No simulator call ${req.params.id}`);
    return { sim, call };
  };

  app.get<{ Querystring: { limit?: number } }>('/admin/sim/voice/calls', { schema: { querystring: listQuery } }, async (req, reply) => {
    const sim = deps.simulator();
    if (!sim) return fail(reply, req, 404, 'NOT_FOUND', NOT_RUNNING);
    const calls = sim.calls().slice(-(req.query.limit ?? 50)).reverse().map(simVoiceCallView);
    return { success: true, code: 'OK', message: 'OK', data: { url: sim.url, calls }, requestId: req.id };
  });

  app.get<{ Params: { id: string } }>('/admin/sim/voice/calls/:id/audio.wav', { schema: { params: idParams } }, async (req, reply) => {
    const found = find(req, reply);
    if (!found) return reply;
    return reply
      .header('content-type', 'audio/wav')
      .header('content-disposition', `attachment; filename="sim-call-${found.call.id}.wav"`)
      .send(found.call.wav());
  });

  app.post<{ Params: { id: string } }>('/admin/sim/voice/calls/:id/bye', { schema: { params: idParams } }, async (req, reply) => {
    const found = find(req, reply);
    if (!found) return reply;
    if (!found.sim.bye(found.call.id)) return fail(reply, req, 409, 'CONFLICT', `Simulator call ${found.call.id} is ${found.call.state}, not answered`);
    return { success: true, code: 'OK', message: 'The trunk hangs up', data: simVoiceCallView(found.call), requestId: req.id };
  });

  app.post<{ Params: { id: string }; Body: { digits: string } }>('/admin/sim/voice/calls/:id/digits', { schema: { params: idParams, body: digitsBody } }, async (req, reply) => {
    const found = find(req, reply);
    if (!found) return reply;
    if (!found.sim.sendDigits(found.call.id, req.body.digits)) return fail(reply, req, 409, 'CONFLICT', `Simulator call ${found.call.id} is ${found.call.state}, not answered`);
    return { success: true, code: 'OK', message: 'Digits sent', data: simVoiceCallView(found.call), requestId: req.id };
  });
}
