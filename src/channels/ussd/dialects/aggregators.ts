import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../../../http/errors.js';
import type { Db } from '../../../store/types.js';
import type { Answer, UssdCore } from '../session-core.js';
import { canonicalCode } from '../service-code.js';
import type { EndStatus } from '../session-store.js';
import type { ConnectorRow, UssdStore } from '../ussd-store.js';

export interface AggregatorRoutesDeps {
  core: UssdCore;
  store: UssdStore;
  db: Db;
}

/** Africa's Talking's session callback (form fields). */
interface AtHop {
  sessionId?: string;
  serviceCode?: string;
  phoneNumber?: string;
  networkCode?: string;
  text?: string;
}

/** Africa's Talking's end-of-session notice. */
interface AtEnd extends AtHop {
  status?: string;
  errorMessage?: string;
}

/** Hubtel's USSD request (JSON). */
interface HubtelHop {
  Type?: string;
  Mobile?: string;
  SessionId?: string;
  ServiceCode?: string;
  Message?: string;
  Operator?: string;
}

function secretOf(req: FastifyRequest): string | undefined {
  const header = req.headers['x-ferry-ussd-secret'];
  if (typeof header === 'string') return header;
  const q = (req.query as { key?: unknown } | undefined)?.key;
  return typeof q === 'string' ? q : undefined;
}

const AT_END_STATUS: Record<string, EndStatus> = { success: 'Success', incomplete: 'Incomplete', failed: 'Failed' };

const callbackSchema = (summary: string, description: string) => ({
  tags: ['ussd'],
  summary,
  description,
  params: { type: 'object', required: ['connectorId'], properties: { connectorId: { type: 'string', maxLength: 64 } } },
  querystring: { type: 'object', properties: { key: { type: 'string', maxLength: 200, description: 'the connector secret (or header X-Ferry-Ussd-Secret)' } } },
});

/**
 * The aggregator endpoints: one per connector (`POST /v1/ussd/in/{connectorId}`), speaking the connector's dialect
 * (Africa's Talking form fields answered `CON …`/`END …` in text/plain, or Hubtel's JSON) around the one session core.
 * No API key: the connector's shared secret (query `key` or header X-Ferry-Ussd-Secret, compared in constant time)
 * and/or its IP allow-list authenticate the aggregator.
 */
export async function aggregatorRoutes(app: FastifyInstance, deps: AggregatorRoutesDeps): Promise<void> {
  const { core, store } = deps;
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 16 * 1024 }, (_req, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(body as string)));
  });

  async function connector(req: FastifyRequest<{ Params: { connectorId: string } }>): Promise<ConnectorRow> {
    const c = await store.authenticate(deps.db, req.params.connectorId, secretOf(req), req.clientIp);
    if (!c) throw new ApiError('INVALID_CREDENTIALS', { message: 'Unknown connector, wrong secret or an address outside its allow-list' });
    return c;
  }

  const conEnd = (a: Answer) => `${a.end ? 'END' : 'CON'} ${a.text}`;

  app.post<{ Params: { connectorId: string }; Body: AtHop & HubtelHop }>(
    '/v1/ussd/in/:connectorId',
    {
      config: { auth: false },
      schema: callbackSchema(
        "An aggregator's session callback (Africa's Talking or Hubtel dialect)",
        "Africa's Talking: form fields sessionId, serviceCode, phoneNumber, networkCode, text (every input joined by *), answered " +
          '`CON <screen>` or `END <screen>` in text/plain. Hubtel: JSON {Type: Initiation|Response|Release|Timeout, Mobile, SessionId, ServiceCode, ' +
          'Message, Operator}, answered {Type: Response|Release, Message}. The code routes among the connector account\'s service codes only. ' +
          'INVALID_CREDENTIALS (401) for an unknown connector, a wrong secret or an address outside the allow-list.',
      ),
    },
    async (req, reply) => {
      const c = await connector(req);
      const b = (req.body ?? {}) as AtHop & HubtelHop;
      const missing = (c.dialect === 'hubtel' ? ['SessionId', 'Mobile', 'Type'] : ['sessionId', 'phoneNumber', 'serviceCode']).filter(
        (f) => typeof (b as Record<string, unknown>)[f] !== 'string' || !(b as Record<string, string>)[f],
      );
      if (missing.length) throw new ApiError('VALIDATION_ERROR', { data: { errors: missing.map((field) => ({ field: `body.${field}`, message: 'required' })) } });
      if (c.dialect === 'hubtel') {
        const key = `hubtel:${c.id}:${b.SessionId ?? ''}`;
        const type = (b.Type ?? '').toLowerCase();
        if (type === 'release' || type === 'timeout') {
          await core.networkEnd(key);
          return reply.type('application/json').send({ Type: 'Release', Message: '' });
        }
        let a: Answer | null = null;
        if (type !== 'initiation') a = await core.input(key, (b.Message ?? '').trim());
        // The Initiation's Message is what the phone dialled (an extended code pre-fills inputs); else the ServiceCode.
        if (!a) a = await core.begin({ channel: 'hubtel', networkKey: key, phone: (b.Mobile ?? '').replace(/^\+/, ''), networkCode: b.Operator ?? '', dialled: canonicalCode(b.Message ?? '') ? b.Message! : (b.ServiceCode ?? ''), accountId: c.accountId });
        return reply.type('application/json').send({ Type: a.end ? 'Release' : 'Response', Message: a.text });
      }
      const key = `at:${c.id}:${b.sessionId ?? ''}`;
      const text = b.text ?? '';
      let a: Answer | null = null;
      // Africa's Talking repeats every input so far in `text`: the newest is the last part.
      if (text !== '') a = await core.input(key, text.split('*').pop()!);
      if (!a) {
        a = await core.begin({
          channel: 'africastalking',
          networkKey: key,
          phone: (b.phoneNumber ?? '').replace(/^\+/, ''),
          networkCode: b.networkCode ?? '',
          dialled: b.serviceCode ?? '',
          inputs: text ? text.split('*') : [],
          accountId: c.accountId,
        });
      }
      return reply.type('text/plain; charset=utf-8').send(conEnd(a));
    },
  );

  app.post<{ Params: { connectorId: string }; Body: AtEnd }>(
    '/v1/ussd/in/:connectorId/events',
    {
      config: { auth: false },
      schema: callbackSchema(
        "Africa's Talking's end-of-session notice",
        'Form fields sessionId, status (Success, Incomplete, Failed), errorMessage…: ends the live session with that status (Incomplete when unknown); ' +
          'a session already ended is left as it is. Answers 200 OK.',
      ),
    },
    async (req, reply) => {
      const c = await connector(req);
      const b = req.body ?? {};
      const status = AT_END_STATUS[(b.status ?? '').toLowerCase()] ?? 'Incomplete';
      await core.networkEnd(`at:${c.id}:${b.sessionId ?? ''}`, status, b.errorMessage ? String(b.errorMessage).slice(0, 200) : null);
      return reply.type('text/plain; charset=utf-8').send('OK');
    },
  );
}
