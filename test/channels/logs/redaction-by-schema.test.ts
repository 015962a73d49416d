// The request logs store a body redacted by its route's schema: for every operation of the OpenAPI description (every
// module on), a body with a distinct sentinel in every string field (at any depth, free-form objects included) and in
// a member the schema does not know goes through the real request log; no sentinel of a field marked x-ferry-redact
// (or under one) is stored, nor the unknown member's, and every field named like a secret or like customer content
// is marked.
import t from 'tap';
import { REDACTED, redactBySchema, storedRequestBody } from '../../../src/channels/logs/redact.js';
import { accountWithKey, call, startDaemon } from '../../helpers/daemon.js';
import { backendLabel } from '../../helpers/env.js';

type Schema = {
  type?: string | string[];
  properties?: Record<string, Schema>;
  additionalProperties?: boolean | Schema;
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  'x-ferry-redact'?: string;
};

/** Field names that must be marked wherever a body schema has them. */
const MUST_MARK = new Set(['pin', 'code', 'password', 'secret', 'apikey', 'privatekey', 'key', 'credentials', 'token', 'data', 'variables', 'content', 'message', 'text', 'html', 'inputs']);

interface Sentinel {
  value: string;
  field: string;
  /** Marked, or under a marked field, or a member the schema does not describe. */
  hidden: boolean;
}

t.test(`request bodies are stored redacted by their route's schema (${backendLabel})`, async (t) => {
  const d = await startDaemon({ FERRY_LOGS_FLUSH_MS: '20', FERRY_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true' });
  t.teardown(() => d.stop());
  const { token } = await accountWithKey(d, 'redact', 'all');
  const doc = (await call(d.api, 'GET', '/v1/openapi.json')).json;
  const base = new URL(doc.servers[0].url, d.api).pathname.replace(/\/$/, '');

  let n = 0;
  const unmarked: string[] = [];
  /** A value for the schema with a sentinel in every string, recording each sentinel. */
  const build = (s: Schema | undefined, field: string, hidden: boolean, out: Sentinel[], depth = 0): unknown => {
    const marked = hidden || !!s?.['x-ferry-redact'];
    const name = field.split('.').pop()!.replace(/\[\d+\]$/, '');
    const scalar = s?.type === 'boolean' || s?.type === 'integer' || s?.type === 'number';
    // Not secrets nor customer content by their place: utm.content is a campaign label (utm_content); a USSD menu's
    // screens (text) and option keys are the menu's definition.
    const exempt = field.endsWith('.utm.content') || field.startsWith('body.tree.');
    if (s && MUST_MARK.has(name.toLowerCase()) && !marked && !scalar && !exempt) unmarked.push(field);
    const alt = s && !s.type && (s.anyOf ?? s.oneOf)?.find((a) => a.type !== 'null');
    const schema = alt ? { ...alt, 'x-ferry-redact': s?.['x-ferry-redact'] ?? alt['x-ferry-redact'] } : s;
    const types = schema ? (Array.isArray(schema.type) ? schema.type : [schema.type]) : ['string'];
    if (depth < 6 && types.includes('object')) {
      const obj: Record<string, unknown> = {};
      for (const [k, p] of Object.entries(schema?.properties ?? {})) obj[k] = build(p, `${field}.${k}`, marked, out, depth + 1);
      // A member a free-form object allows (its name kept, its value not: nothing describes it).
      // When additionalProperties is a schema, the member is described by it (and redacted only if marked).
      const extra = schema?.additionalProperties;
      if (extra && typeof extra === 'object') obj.zzFree = build(extra, `${field}.zzFree`, marked, out, depth + 1);
      else if (!schema?.properties || extra !== false) obj.zzFree = build(undefined, `${field}.zzFree`, true, out, depth + 1);
      return obj;
    }
    if (depth < 6 && types.includes('array')) return [build(schema?.items, `${field}[0]`, marked, out, depth + 1)];
    if (!types.includes('string') && types[0] !== undefined) return types.includes('integer') || types.includes('number') ? 1 : types.includes('boolean') ? true : null;
    const value = `S${String(++n).padStart(4, '0')}ZZ`;
    out.push({ value, field, hidden: marked });
    return value;
  };

  const sent: Array<{ op: string; requestId: string; sentinels: Sentinel[] }> = [];
  for (const [template, ops] of Object.entries<Record<string, any>>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(ops)) {
      const schema: Schema | undefined = op.requestBody?.content?.['application/json']?.schema;
      if (!schema) continue;
      // An operation no API key opens (public, security: [], or for end-user tokens only, such as the chat widget's) is
      // not in an account's API request logs: they hold what the account's keys did.
      const byKey = (op.security ?? [{ basicAuth: [] }]).some((s: Record<string, unknown>) => 'basicAuth' in s || 'bearerAuth' in s);
      if (!byKey) continue;
      const sentinels: Sentinel[] = [];
      const body = build(schema, 'body', false, sentinels) as Record<string, unknown>;
      // A member the schema does not describe: redacted (the route may refuse the body; it is logged all the same).
      body.zzUnknown = `S${String(++n).padStart(4, '0')}ZZ`;
      sentinels.push({ value: body.zzUnknown as string, field: 'body.zzUnknown', hidden: true });
      const path = base + template.replace(/\{[^}]+\}/g, 'x1');
      const r = await call(d.api, method.toUpperCase(), path, { token, body });
      t.not(r.status, 500, `${method.toUpperCase()} ${template} answered`);
      sent.push({ op: `${method.toUpperCase()} ${template}`, requestId: r.json?.requestId ?? r.headers.get('x-request-id'), sentinels });
    }
  }
  t.ok(sent.length > 25, `${sent.length} operations with a body`);
  t.same(unmarked, [], 'every field named like a secret or customer content is marked x-ferry-redact');

  for (const s of sent) {
    let log: { requestBody: string | null } | null = null;
    // Written within the flush interval (20 ms); bounded polling.
    for (let i = 0; i < 200 && !log; i++) {
      const r = await call(d.api, 'GET', `/v1/logs/${s.requestId}`, { token });
      if (r.status === 200) log = r.json.data;
      else await new Promise((res) => setTimeout(res, 10));
    }
    if (!log) {
      t.fail(`${s.op}: not in the request logs`);
      continue;
    }
    const stored = String(log.requestBody ?? '');
    const leaked = s.sentinels.filter((x) => x.hidden && stored.includes(x.value)).map((x) => x.field);
    t.same(leaked, [], `${s.op}: no marked or unknown field stored`);
    const kept = s.sentinels.filter((x) => !x.hidden);
    if (kept.length) t.ok(kept.some((x) => stored.includes(x.value)), `${s.op}: unmarked fields are kept (${kept.length})`);
  }
});

t.test('redaction by schema: marks, unknown members, free-form objects, arrays, alternatives; no schema: the allow-list', async (t) => {
  const schema = {
    type: 'object',
    properties: {
      to: { type: 'string' },
      apiKey: { type: 'string' },
      pin: { type: 'string', 'x-ferry-redact': 'secret' },
      items: { type: 'array', items: { type: 'object', properties: { id: { type: 'string' }, body: { type: 'string', 'x-ferry-redact': 'personal' } } } },
      metadata: { type: 'object' },
      either: { anyOf: [{ type: 'string' }, { type: 'object', properties: { n: { type: 'integer' } } }] },
      labels: { type: 'object', additionalProperties: { type: 'string' } },
    },
  } as const;
  t.same(
    redactBySchema(
      { to: '233', apiKey: 'k', pin: '1234', items: [{ id: 'a', body: 'hi', extra: 'x' }], metadata: { customer: 'Ama' }, either: { n: 2, m: 'x' }, labels: { a: 'b' }, stray: 'x' },
      schema,
    ),
    {
      to: '233',
      apiKey: REDACTED,
      pin: REDACTED,
      items: [{ id: 'a', body: REDACTED, extra: REDACTED }],
      metadata: { customer: REDACTED },
      either: { n: 2, m: REDACTED },
      labels: { a: 'b' },
      stray: REDACTED,
    },
    'marked, secret-named and undescribed members are redacted; described ones kept',
  );
  t.same(
    JSON.parse(storedRequestBody({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'sms_send', arguments: { to: '233', message: 'hi', privateKey: 'p', note: 'n' } } }, 8192)!),
    { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'sms_send', arguments: { to: '233', message: REDACTED, privateKey: REDACTED, note: REDACTED } } },
    'without a schema only the allow-listed members are kept',
  );
  t.equal(storedRequestBody(['a secret', { to: '233' }], 8192), JSON.stringify([REDACTED, { to: '233' }]), 'a bare value is not kept');
  t.equal(storedRequestBody(Buffer.from('raw'), 8192), '[body of 3 bytes not kept]', 'a raw body is not kept');
});
