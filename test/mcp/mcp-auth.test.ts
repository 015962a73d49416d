// /mcp: the Host/Origin guard runs before authentication (a refused Host is no failed attempt), a tool call is
// authenticated and counted against the key's rate limit once, and tool errors have the shape docs/mcp.md gives.
import { request as httpRequest } from 'node:http';
import t from 'tap';
import type { KeyService } from '../../src/accounts/key-service.js';
import type { Throttle } from '../../src/store/types.js';
import { accountWithKey, startDaemon, type TestDaemon } from '../helpers/daemon.js';
import { backendLabel } from '../helpers/env.js';

/** A raw JSON-RPC POST to /mcp with the Host header of our choosing (fetch does not let one set it). */
function mcpPost(d: TestDaemon, opts: { host?: string; authorization?: string; message: unknown }): Promise<{ status: number; json: any }> {
  const u = new URL(`${d.api}/mcp`);
  const body = JSON.stringify(opts.message);
  const headers: Record<string, string | number> = { host: opts.host ?? `127.0.0.1:${u.port}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'content-length': Buffer.byteLength(body) };
  if (opts.authorization) headers.authorization = opts.authorization;
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: u.hostname, port: u.port, path: '/mcp', method: 'POST', headers }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, json: text ? JSON.parse(text) : null }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const toolCall = (id: number, name: string, args: Record<string, unknown>) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
const badAuth = `Basic ${Buffer.from('ak_live_cccccccccccccccccccc:sk_nope').toString('base64')}`;

t.test(`MCP authentication: Host first, one authentication and one rate-limit take per request (${backendLabel})`, async (t) => {
  const d = await startDaemon({ FERRY_AUTH_FAILURE_LIMIT: '3', FERRY_HTTP_RATE_LIMIT_PER_KEY_PER_SECOND: '1', FERRY_HTTP_RATE_LIMIT_BURST: '2' });
  t.teardown(() => d.stop());
  const { key, token } = await accountWithKey(d, 'agent', ['account:read', 'sms:read']);
  const authorization = `Basic ${token}`;

  t.test('a refused Host is not a failed authentication', async (t) => {
    const codes: string[] = [];
    for (let i = 0; i < 8; i++) codes.push((await mcpPost(d, { host: `attacker${i}.example`, authorization: badAuth, message: toolCall(1, 'get_balance', {}) })).json.code);
    t.same(new Set(codes), new Set(['MCP_HOST_NOT_ALLOWED']), 'refused for its Host, before its credentials are looked at');
    const next = await mcpPost(d, { authorization: badAuth, message: toolCall(1, 'get_balance', {}) });
    t.equal(next.status, 401);
    t.equal(next.json.code, 'INVALID_CREDENTIALS', 'the address has spent none of its failure budget');
  });

  t.test('a tool call authenticates once and takes the rate limit once', async (t) => {
    const keys = (d.daemon as unknown as { keys: KeyService }).keys;
    const throttle = (d.daemon as unknown as { backends: { throttle: Throttle } }).backends.throttle;
    let authentications = 0;
    let takes = 0;
    const authenticate = keys.authenticate.bind(keys);
    const take = throttle.take.bind(throttle);
    keys.authenticate = (...a: Parameters<KeyService['authenticate']>) => ((authentications += a[0] === key.keyId ? 1 : 0), authenticate(...a));
    throttle.take = (...a: Parameters<Throttle['take']>) => ((takes += a[0] === `rate:key:${key.keyId}` ? 1 : 0), take(...a));
    t.teardown(() => {
      keys.authenticate = authenticate;
      throttle.take = take;
    });
    // A burst of 2: two tool calls fit only if each takes once.
    for (const id of [1, 2]) {
      const r = await mcpPost(d, { authorization, message: toolCall(id, 'get_balance', {}) });
      t.equal(r.status, 200, `call ${id}`);
      t.notOk(r.json.result.isError, `call ${id} served: ${JSON.stringify(r.json.result.structuredContent)}`);
      t.equal(r.json.result.structuredContent.code, 'BALANCE');
    }
    t.equal(authentications, 2, 'one authentication per tool call');
    t.equal(takes, 2, 'one rate-limit take per tool call');
  });

  t.test('an internal-call header from outside is no credential', async (t) => {
    const r = await fetch(`${d.api}/v1/account/balance`, { headers: { 'x-ferry-internal-call': 'guessed' } });
    t.equal(r.status, 401);
    t.equal(((await r.json()) as { code: string }).code, 'AUTH_HEADER_MISSING');
  });
});

t.test(`MCP tool errors have the documented shape (${backendLabel})`, async (t) => {
  const d = await startDaemon();
  t.teardown(() => d.stop());
  const { token } = await accountWithKey(d, 'shapes', ['sms:read', 'sms:send']);
  const authorization = `Basic ${token}`;
  const call = async (name: string, args: Record<string, unknown>) => (await mcpPost(d, { authorization, message: toolCall(7, name, args) })).json;

  // Every tool error: isError, text `CODE: message`, structuredContent {code, message, requestId, data?}.
  const rest = (await call('get_sms_status', { messageId: 'msg_nope' })).result;
  t.equal(rest.isError, true);
  t.match(rest.structuredContent, { code: 'MESSAGE_NOT_FOUND', message: String, requestId: /^req_/ });
  t.equal(rest.content[0].text, `MESSAGE_NOT_FOUND: ${rest.structuredContent.message}`);

  const invalid = (await call('send_sms', { to: '0241230001' })).result;
  t.equal(invalid.isError, true);
  t.match(invalid.structuredContent, { code: 'VALIDATION_ERROR', message: String, requestId: /^req_/, data: { errors: [{ field: String, message: String }] } });
  t.notOk('errors' in invalid.structuredContent, 'details under data, as in the REST envelope');

  const scope = (await call('get_balance', {})).result;
  t.equal(scope.isError, true);
  t.match(scope.structuredContent, { code: 'INSUFFICIENT_SCOPE', requestId: /^req_/, data: { requiredScope: 'account:read' } });
  t.notOk('requiredScope' in scope.structuredContent);

  // An unknown tool is a JSON-RPC protocol error (Invalid params), as the MCP spec has it, not a tool result.
  const unknown = await call('no_such_tool', {});
  t.equal(unknown.error.code, -32602);
  t.match(unknown.error.message, /Unknown tool: no_such_tool/);
  t.notOk(unknown.result);
});
