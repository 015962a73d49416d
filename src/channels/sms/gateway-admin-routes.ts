import type { FastifyInstance } from 'fastify';
import { upstreamSchema, type UpstreamConfig } from '../../config/schema.js';
import { ok } from '../../http/envelope.js';
import { ApiError, invalidField } from '../../http/errors.js';
import type { Ledger } from '../../ledger/ledger.js';
import type { CustomerOutbox } from '../../receipts/customer-outbox.js';
import type { Router, SwitchResult } from '../../routing/router.js';
import { RoutingError } from '../../routing/routing-error.js';
import { ledgerMessageId } from '../../messaging/smpp-ingress/smpp-message-id.js';
import type { UpstreamPool } from '../../smpp/upstream/upstream-pool.js';
import type { UpstreamStatus } from '../../smpp/upstream/upstream.js';
import { UpstreamStore } from '../../smpp/upstream/upstream-store.js';
import { SIMULATOR_UPSTREAM_ID } from '../../sim/smpp/simulator-record.js';
import { audit } from '../../admin/audit.js';

export interface GatewayAdminDeps {
  router: Router;
  pool: UpstreamPool;
  ledger: Ledger;
  outbox: CustomerOutbox;
  upstreamStore: UpstreamStore;
  /** Upstreams defined in the config file: the admin API may override them but not remove them. */
  configUpstreamIds: ReadonlySet<string>;
  /**
   * The config-file entry of an upstream. When given, DELETE of a config upstream that has a runtime override
   * drops the override and puts the file's entry back; without it such a DELETE is refused like any other.
   */
  configUpstream?: (id: string) => UpstreamConfig | undefined;
  /** Something was added to the customer outbox (a replayed receipt): wake its sender. */
  onOwed?: () => void;
}

const ID_PATTERN = upstreamSchema.properties.id.pattern;
const ruleParam = { type: 'object', required: ['rule'], properties: { rule: { type: 'string', minLength: 1, maxLength: 64 } } } as const;
const upstreamParam = { type: 'object', required: ['id'], properties: { id: { type: 'string', pattern: ID_PATTERN } } } as const;
const messageParam = { type: 'object', required: ['id'], properties: { id: { type: 'string', minLength: 1, maxLength: 100 } } } as const;

// The id comes from the path and the password may be kept from the stored entry, so neither is required here.
const upstreamBody = { ...upstreamSchema, required: upstreamSchema.required.filter((k) => k !== 'id' && k !== 'password') };

function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

/** An upstream's status with its times (epoch milliseconds inside the pool) in ISO 8601. */
function statusView(s: UpstreamStatus) {
  return { ...s, pausedUntil: iso(s.pausedUntil), binds: s.binds.map((b) => ({ ...b, nextAttemptAt: iso(b.nextAttemptAt) })) };
}

function routingError(err: unknown): never {
  if (err instanceof RoutingError) {
    if (err.code === 'UNKNOWN_RULE') throw new ApiError('RULE_NOT_FOUND', { message: err.message });
    if (err.code === 'UNKNOWN_UPSTREAM') throw new ApiError('UNKNOWN_UPSTREAM', { message: err.message });
    throw new ApiError('VALIDATION_ERROR', { message: err.message });
  }
  throw err;
}

/**
 * The gateway part of the admin API: route switches, runtime upstreams, message inspection and receipt replay.
 * Registered by the SMS module inside adminRoutes, so the admin token hook covers every route.
 */
export function registerGatewayRoutes(app: FastifyInstance, deps: GatewayAdminDeps): void {
  const { router, pool, ledger, outbox, upstreamStore } = deps;

  // ---- routes ----

  app.get('/admin/routes', async (req) => ok(req, 'ROUTES', router.rules()));

  app.post<{ Params: { rule: string }; Body: { upstream: string } }>(
    '/admin/routes/:rule/switch',
    {
      schema: {
        params: ruleParam,
        body: { type: 'object', required: ['upstream'], additionalProperties: false, properties: { upstream: { type: 'string', minLength: 1, maxLength: 64 } } },
      },
    },
    async (req) => {
      const { rule: ruleId } = req.params;
      const { upstream } = req.body;
      let result: SwitchResult;
      try {
        const rule = router.rule(ruleId);
        // Checked here too: a router built without knowsUpstream would accept any id.
        if (!pool.has(upstream)) throw new RoutingError('UNKNOWN_UPSTREAM', `no upstream ${upstream}`);
        if (rule.override === upstream) {
          const order = rule.effective();
          return ok(req, 'ROUTE_SWITCHED', { ruleId, previousOverride: upstream, before: order, after: order }, `Rule ${ruleId} already sends to ${upstream} first`);
        }
        result = router.switchRoute(ruleId, upstream, 'admin');
      } catch (err) {
        routingError(err);
      }
      audit(req, 'route.switched', { rule: ruleId, upstream, previousOverride: result.previousOverride, before: result.before, after: result.after }, 'route switched');
      const warn = pool.isUp(upstream) ? '' : `; ${upstream} has no bound bind now, so traffic fails over to ${result.after.slice(1).join(', ') || 'nothing'}`;
      return ok(req, 'ROUTE_SWITCHED', result, `Rule ${ruleId} now sends to ${upstream} first${warn}`);
    },
  );

  app.delete<{ Params: { rule: string } }>('/admin/routes/:rule/switch', { schema: { params: ruleParam } }, async (req) => {
    const { rule: ruleId } = req.params;
    try {
      const rule = router.rule(ruleId);
      if (rule.override === null) {
        const order = rule.effective();
        return ok(req, 'ROUTE_SWITCH_CLEARED', { ruleId, previousOverride: null, before: order, after: order }, `Rule ${ruleId} was not switched`);
      }
      const result = router.clearSwitch(ruleId, 'admin');
      audit(req, 'route.cleared', { rule: ruleId, previousOverride: result.previousOverride, before: result.before, after: result.after }, 'route switch cleared');
      return ok(req, 'ROUTE_SWITCH_CLEARED', result, `Rule ${ruleId} is back to its configured upstreams`);
    } catch (err) {
      routingError(err);
    }
  });

  // ---- upstreams ----

  const sourceOf = (id: string, runtime: ReadonlySet<string>): 'runtime' | 'config' | 'builtin' =>
    runtime.has(id) ? 'runtime' : deps.configUpstreamIds.has(id) ? 'config' : 'builtin';

  app.get('/admin/upstreams', async (req) => {
    const runtime = new Set(await upstreamStore.ids());
    return ok(
      req,
      'UPSTREAMS',
      pool.status().map((s) => ({ ...statusView(s), source: sourceOf(s.id, runtime) })),
    );
  });

  app.get<{ Params: { id: string } }>('/admin/upstreams/:id', { schema: { params: upstreamParam } }, async (req) => {
    const up = pool.get(req.params.id);
    if (!up) throw new ApiError('UPSTREAM_NOT_FOUND', { message: `No upstream ${req.params.id}` });
    const runtime = new Set(await upstreamStore.ids());
    return ok(req, 'UPSTREAM', { config: UpstreamStore.redact(up.config), status: statusView(up.status()), source: sourceOf(up.id, runtime) });
  });

  app.put<{ Params: { id: string }; Body: Partial<UpstreamConfig> }>(
    '/admin/upstreams/:id',
    { schema: { params: upstreamParam, body: upstreamBody } },
    async (req, reply) => {
      const { id } = req.params;
      const body = req.body;
      if (id === SIMULATOR_UPSTREAM_ID) throw invalidField('id', `${id} is reserved for the embedded SMSC simulator`);
      if (body.id !== undefined && body.id !== id) throw invalidField('id', `must be ${id} (the id in the path) or left out`);
      let password = body.password;
      // Leaving the password out (or sending back the mask a GET showed) keeps the current one.
      if (password === undefined || password === UpstreamStore.MASK) {
        password = (await upstreamStore.get(id))?.password ?? pool.get(id)?.config.password;
        if (password === undefined) throw invalidField('password', 'required for a new upstream');
      }
      const config = { id, ...body, password } as UpstreamConfig;
      await upstreamStore.save(config);
      const result = pool.upsert(config);
      // Where and how it binds, never its password (kept or replaced: only whether it changed).
      audit(
        req,
        'upstream.saved',
        {
          upstream: id,
          result,
          host: config.host,
          port: config.port,
          systemId: config.systemId,
          passwordChanged: body.password !== undefined && body.password !== UpstreamStore.MASK,
          overridesConfig: deps.configUpstreamIds.has(id),
        },
        'upstream saved',
      );
      if (result === 'added') reply.code(201);
      const what =
        result === 'added' ? `Upstream ${id} added; it is binding now` : result === 'replaced' ? `Upstream ${id} replaced; the old binds drain` : `Upstream ${id} unchanged`;
      const note = deps.configUpstreamIds.has(id) ? ' (this overrides its config-file entry)' : '';
      return ok(req, 'UPSTREAM_SAVED', { result, upstream: UpstreamStore.redact(config) }, what + note);
    },
  );

  app.delete<{ Params: { id: string } }>('/admin/upstreams/:id', { schema: { params: upstreamParam } }, async (req) => {
    const { id } = req.params;
    const runtime = (await upstreamStore.ids()).includes(id);
    if (deps.configUpstreamIds.has(id)) {
      const fromFile = deps.configUpstream?.(id);
      if (runtime && fromFile) {
        await upstreamStore.remove(id);
        const result = pool.upsert(fromFile);
        audit(req, 'upstream.reverted', { upstream: id, result }, 'upstream runtime override removed; config-file entry back');
        return ok(req, 'UPSTREAM_REVERTED', { id, result }, `Runtime override of ${id} removed; the config-file entry is back`);
      }
      throw new ApiError('UPSTREAM_IN_CONFIG', {
        message: `Upstream ${id} is defined in the config file; remove it there and restart. The admin API removes only upstreams it added.`,
      });
    }
    if (!runtime) {
      if (pool.has(id)) throw new ApiError('CONFLICT', { message: `Upstream ${id} was not added through the admin API; it cannot be removed here` });
      throw new ApiError('UPSTREAM_NOT_FOUND', { message: `No upstream ${id}` });
    }
    await upstreamStore.remove(id);
    pool.remove(id);
    const named = router.rules().filter((r) => r.upstreams.includes(id) || r.override === id).map((r) => r.id);
    audit(req, 'upstream.removed', { upstream: id, rules: named }, 'upstream removed');
    const note = named.length ? `; rules ${named.join(', ')} still name it, so their traffic fails over` : '';
    return ok(req, 'UPSTREAM_REMOVED', { id, rules: named }, `Upstream ${id} removed; in-flight submits drain${note}`);
  });

  // ---- messages and receipts ----

  app.get<{ Params: { id: string } }>('/admin/messages/:id', { schema: { params: messageParam } }, async (req) => {
    // The SMPP form a customer quotes (the id without msg_) names the same message.
    const id = ledgerMessageId(req.params.id) ?? req.params.id;
    const message = await ledger.get(id);
    if (!message) throw new ApiError('MESSAGE_NOT_FOUND', { message: `No message ${id}` });
    const [history, parts] = await Promise.all([ledger.history(id), ledger.parts(id)]);
    // A sealed text (an OTP code) stays sealed: operators see the masked body and whether a sealed one exists.
    const { bodySealed, ...shown } = message;
    // Times in ISO 8601 like everywhere else in the admin API (the ledger keeps epoch milliseconds).
    return ok(req, 'MESSAGE', {
      message: {
        ...shown,
        bodyBytes: message.bodyBytes ? message.bodyBytes.toString('hex') : null,
        sealed: bodySealed !== null,
        scheduledAt: iso(message.scheduledAt),
        expiresAt: iso(message.expiresAt),
        createdAt: iso(message.createdAt),
        updatedAt: iso(message.updatedAt),
        finalAt: iso(message.finalAt),
      },
      history: history.map((e) => ({ ...e, at: iso(e.at) })),
      parts,
    });
  });

  app.post<{ Params: { id: string } }>('/admin/receipts/:id/replay', { schema: { params: messageParam } }, async (req) => {
    const id = ledgerMessageId(req.params.id) ?? req.params.id;
    const result = await outbox.replay(id);
    switch (result) {
      case 'queued':
        audit(req, 'receipt.replayed', { messageId: id }, 'receipt replay queued');
        deps.onOwed?.();
        return ok(req, 'RECEIPT_REPLAY_QUEUED', { messageId: id, result }, 'Receipt queued; it is sent when the customer has a receiver bind');
      case 'not_found':
        throw new ApiError('MESSAGE_NOT_FOUND', { message: `No message ${id}` });
      case 'not_final':
        throw new ApiError('NOT_FINAL', { message: `Message ${id} has no final status yet; its receipt is sent when it gets one` });
      case 'not_smpp':
        throw new ApiError('NOT_SMPP', {
          message: `Message ${id} was not submitted over SMPP, so there is no bind to send a receipt to; REST messages report status through webhooks (not replayable yet)`,
        });
    }
  });
}
