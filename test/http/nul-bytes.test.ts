// Text Postgres cannot store (a NUL character; a lone UTF-16 surrogate) is refused at the edge with 400
// VALIDATION_ERROR naming the field, on every route: one table built from the OpenAPI description of a daemon with
// every module on, a NUL in each path parameter, each query parameter and each top-level string of a body that is
// otherwise valid (so that, without the check, the value would reach the handler and its statements).
import t from 'tap';
import { accountWithKey, call, startDaemon } from '../helpers/daemon.js';
import { backendLabel } from '../helpers/env.js';
import { rawHttp } from '../helpers/raw-http.js';

type Schema = {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  enum?: unknown[];
  const?: unknown;
  format?: string;
  minimum?: number;
  minItems?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  examples?: unknown[];
  example?: unknown;
  default?: unknown;
  anyOf?: Schema[];
  oneOf?: Schema[];
};

/** A value the schema accepts, as plain as can be (bounded depth: schemas of menus nest). */
function sample(s: Schema | undefined, depth = 0): unknown {
  if (!s || depth > 6) return 'x';
  if (s.const !== undefined) return s.const;
  if (s.enum?.length) return s.enum[0];
  if (s.example !== undefined) return s.example;
  if (s.examples?.length) return s.examples[0];
  if (s.default !== undefined) return s.default;
  const alt = s.anyOf ?? s.oneOf;
  if (alt?.length) return sample(alt[0], depth + 1);
  const type = Array.isArray(s.type) ? s.type.find((x) => x !== 'null') : s.type;
  switch (type) {
    case 'integer':
    case 'number':
      return s.minimum ?? 1;
    case 'boolean':
      return false;
    case 'array':
      return Array.from({ length: s.minItems ?? 1 }, () => sample(s.items, depth + 1));
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const k of s.required ?? []) out[k] = sample(s.properties?.[k], depth + 1);
      return out;
    }
    default:
      if (s.format === 'email') return 'a@example.com';
      if (s.format === 'uri') return 'https://example.com/x';
      if (s.format === 'date-time') return new Date(Date.now() + 3_600_000).toISOString();
      return 'x'.repeat(Math.max(1, Math.min(s.minLength ?? 1, 8)));
  }
}

function isStringSchema(s: Schema | undefined): boolean {
  if (!s) return false;
  const types = Array.isArray(s.type) ? s.type : [s.type];
  return types.includes('string') || !!(s.anyOf ?? s.oneOf)?.some((a) => isStringSchema(a));
}

interface Case {
  name: string;
  method: string;
  path: string;
  body?: unknown;
  field: string;
}

t.test(`NUL and lone surrogates are 400 VALIDATION_ERROR naming the field, on every route (${backendLabel})`, async (t) => {
  const d = await startDaemon({ FERRY_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true' });
  t.teardown(() => d.stop());
  const { token } = await accountWithKey(d, 'nul', 'all');
  const doc = (await call(d.api, 'GET', '/v1/openapi.json')).json;
  const base = new URL(doc.servers[0].url, d.api).pathname.replace(/\/$/, '');

  const cases: Case[] = [];
  let operations = 0;
  for (const [template, ops] of Object.entries<Record<string, any>>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(ops)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      operations++;
      const params: Array<{ in: string; name: string; schema?: Schema }> = op.parameters ?? [];
      const pathParams = params.filter((p) => p.in === 'path');
      const fill = (bad?: string) => base + template.replace(/\{([^}]+)\}/g, (_m, name: string) => (name === bad ? 'x%00y' : 'x1'));
      const bodySchema: Schema | undefined = op.requestBody?.content?.['application/json']?.schema;
      const body = bodySchema ? sample(bodySchema) : undefined;
      const label = `${method.toUpperCase()} ${template}`;
      for (const p of pathParams) cases.push({ name: `${label}: path ${p.name}`, method, path: fill(p.name), body, field: `params.${p.name}` });
      for (const p of params.filter((q) => q.in === 'query')) {
        cases.push({ name: `${label}: query ${p.name}`, method, path: `${fill()}?${encodeURIComponent(p.name)}=x%00y`, body, field: `querystring.${p.name}` });
      }
      for (const [name, prop] of Object.entries(bodySchema?.properties ?? {})) {
        if (!isStringSchema(prop)) continue;
        const good = sample(prop);
        const bad = `${typeof good === 'string' ? good : 'x'}\u0000`;
        cases.push({ name: `${label}: body ${name}`, method, path: fill(), body: { ...(body as object), [name]: bad }, field: name });
      }
    }
  }
  t.ok(operations > 60, `the OpenAPI description lists every module's operations (${operations})`);
  t.ok(cases.length > 150, `${cases.length} cases`);

  for (const c of cases) {
    const r = await call(d.api, c.method.toUpperCase(), c.path, { token, body: c.body });
    const fields = (r.json?.data?.errors ?? []).map((e: { field: string }) => e.field);
    if (r.status === 400 && r.json?.code === 'VALIDATION_ERROR' && fields.includes(c.field)) continue;
    t.fail(c.name, { status: r.status, body: r.text.slice(0, 300), field: c.field });
  }
  t.pass(`${cases.length} requests answered 400 VALIDATION_ERROR naming the field`);

  await t.test('a lone surrogate in a JSON string, nested fields, a NUL in a member name', async (t) => {
    // "\ud800" as JSON text: JSON.stringify would escape it the same way.
    const raw = '{"to":"0241234567","from":"Ferry","message":"a\\ud800b"}';
    const r = await call(d.api, 'POST', '/v1/sms/send', { token, raw, headers: { 'content-type': 'application/json' } });
    t.equal(r.status, 400);
    t.same(r.json.data.errors, [{ field: 'message', message: 'must not contain a lone UTF-16 surrogate (not valid Unicode)' }]);
    const bulk = await call(d.api, 'POST', '/v1/sms/bulk', {
      token,
      body: { from: 'Ferry', messages: [{ to: '0241234567', message: 'ok' }, { to: '0241234568', message: 'n\u0000' }] },
    });
    t.equal(bulk.status, 400);
    t.same(bulk.json.data.errors.map((e: { field: string }) => e.field), ['messages.1.message']);
    const member = await call(d.api, 'POST', '/v1/otp/request', { token, body: { phone: '0241234567', message: 'Code {code}', metadata: { 'a\u0000': 'b' } } });
    t.equal(member.status, 400);
    t.same(member.json.data.errors.map((e: { field: string }) => e.field), ['metadata.a\\u0000']);
    const status = await call(d.api, 'GET', '/v1/sms/status/msg_%00abc', { token });
    t.equal(status.status, 400, 'the issue’s request');
    t.same(status.json.data.errors.map((e: { field: string }) => e.field), ['params.messageId']);
  });

  await t.test('a NUL in a header: the HTTP parser refuses it raw; inside Basic credentials it is a malformed header', async (t) => {
    const port = Number(new URL(d.api).port);
    const raw = await rawHttp(port, Buffer.from(`GET /v1/health HTTP/1.1\r\nHost: x\r\nIdempotency-Key: a\0b\r\nAuthorization: Basic ${token}\r\n\r\n`, 'latin1'));
    t.equal(raw.status, 400);
    t.equal(raw.json?.code, 'MALFORMED_REQUEST');
    const nulKey = Buffer.from('ak_live_\0abc:sk_secret').toString('base64');
    const r = await call(d.api, 'GET', '/v1/health', { token: nulKey });
    t.equal(r.status, 401);
    t.equal(r.json.code, 'AUTH_HEADER_MALFORMED');
  });
});
