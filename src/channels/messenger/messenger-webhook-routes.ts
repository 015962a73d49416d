import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../http/errors.js';
import type { MessengerService } from './messenger-service.js';
import { sameToken, verifyHubSignature } from './webhook-signature.js';

export interface MessengerWebhookDeps {
  service: MessengerService;
}

/**
 * The platform's webhooks (public: no API key; the signature is the authentication). Registered as its own
 * encapsulated plugin whose JSON parser keeps the raw bytes, because X-Hub-Signature-256 is over the body exactly as
 * sent. Each change is routed by the business number it names (metadata.phone_number_id, else the WABA in entry.id):
 * the signature must verify with that number's app secret (every number's, when a body names several), and what it
 * carries is that number's account's only. A body naming a number Ferry does not have is refused like a bad signature. A bad signature is 401 and changes nothing. A status for a message this instance cannot find yet is answered
 * 503 so the platform retries it (another instance may still be recording the send).
 */
export async function messengerWebhookRoutes(app: FastifyInstance, deps: MessengerWebhookDeps): Promise<void> {
  await app.register(async (inner) => {
    inner.removeContentTypeParser('application/json');
    inner.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

    inner.get<{ Querystring: Record<string, string> }>(
      '/v1/messenger/webhook',
      {
        config: { auth: false },
        schema: {
          tags: ['messenger'],
          summary: "The platform's webhook handshake: answers hub.challenge when hub.verify_token is right",
          querystring: { type: 'object', additionalProperties: true, properties: { 'hub.mode': { type: 'string' }, 'hub.verify_token': { type: 'string' }, 'hub.challenge': { type: 'string' } } },
        },
      },
      async (req, reply) => {
        const q = req.query;
        const given = q['hub.verify_token'];
        const tokens = typeof given === 'string' ? await deps.service.numbers.verifyTokens() : [];
        if (q['hub.mode'] !== 'subscribe' || typeof given !== 'string' || !tokens.some((t) => sameToken(given, t))) {
          throw new ApiError('INVALID_CREDENTIALS', { message: 'hub.verify_token does not match' });
        }
        reply.type('text/plain');
        return String(q['hub.challenge'] ?? '');
      },
    );

    inner.post(
      '/v1/messenger/webhook',
      {
        config: { auth: false },
        schema: { tags: ['messenger'], summary: "The platform's webhooks: statuses, inbound messages, template reviews, quality (X-Hub-Signature-256 required)" },
      },
      async (req, reply) => {
        const raw = req.body as Buffer | undefined;
        const refused = () => new ApiError('INVALID_CREDENTIALS', { message: 'X-Hub-Signature-256 is missing or wrong' });
        if (!raw) throw refused();
        let body: unknown;
        try {
          body = JSON.parse(raw.toString('utf8'));
        } catch {
          throw refused();
        }
        const numbers = await deps.service.numbersOf(body);
        if (!numbers) throw refused();
        const secrets = new Set([...numbers.values()].map((n) => n.appSecret));
        // A body about no number at all (nothing to apply) still has to be the config app's.
        if (!secrets.size) secrets.add((await deps.service.numbers.byId(deps.service.businessNumber))!.appSecret);
        for (const secret of secrets) if (!verifyHubSignature(secret, raw, req.headers['x-hub-signature-256'])) throw refused();
        const r = await deps.service.handleWebhook(body, numbers);
        if (r.unknown) {
          reply.code(503).header('retry-after', '1');
          return { success: false, code: 'SERVICE_UNAVAILABLE', message: 'a status names a message not recorded yet; retry', requestId: req.id };
        }
        return { success: true, ...r };
      },
    );
  });
}
