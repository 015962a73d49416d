import { request as httpRequest } from 'node:http';
import { randomBytes } from 'node:crypto';
import t, { type Test } from 'tap';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { call, startDaemon, type TestDaemon, simulatorOf } from '../../helpers/daemon.js';
import { backendLabel } from '../../helpers/env.js';

async function customer(d: TestDaemon, name: string, scopes: string | string[] = 'all') {
  const account = await d.adminCall('POST', '/admin/accounts', { name, defaultCountry: 'GH' });
  await d.adminCall('POST', `/admin/accounts/${name}/credit`, { amount: 100 });
  const key = await d.adminCall('POST', '/admin/keys', { account: name, scopes });
  return { accountId: account.id as string, keyId: key.keyId as string, token: key.token as string };
}

/** An MCP client of the official SDK over Streamable HTTP, authenticated with a key (Basic). */
async function mcpClient(t: Test, base: string, token: string, query = ''): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp${query}`), { requestInit: { headers: { authorization: `Basic ${token}` } } });
  const client = new Client({ name: 'ferry-test', version: '1.0.0' });
  await client.connect(transport);
  t.teardown(() => client.close());
  return client;
}

/** A raw POST with the Host header of our choosing (fetch does not let one set it). */
function postWithHost(base: string, host: string, token: string): Promise<{ status: number; body: string }> {
  const u = new URL(`${base}/mcp`);
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: u.hostname, port: u.port, path: '/mcp', method: 'POST', headers: { host, authorization: `Basic ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const structured = (r: unknown) => (r as { structuredContent: Record<string, any> }).structuredContent;

t.test(`MCP server at /mcp (${backendLabel})`, async (t) => {
  const d = await startDaemon({ FERRY_SMPP_SIMULATOR_RECEIPT_DELAY_MS: '20', FERRY_LOGS_FLUSH_MS: '20' });
  t.teardown(() => d.stop());
  const full = await customer(d, 'acme');
  const smsOnly = await customer(d, 'smsonly', ['sms:send', 'sms:read']);

  t.test('tools/list differs by key scope, with annotations; ?products= narrows it', async (t) => {
    const all = await mcpClient(t, d.api, full.token);
    const names = (await all.listTools()).tools.map((x) => x.name).sort();
    t.same(names, ['add_chat_members', 'create_chat_channel', 'create_chat_user_token', 'create_shortlink', 'create_voice_agent', 'get_balance', 'get_call', 'get_email_message', 'get_messenger_status', 'get_push_send', 'get_shortlink_analytics', 'get_sms_status', 'get_ussd_session', 'hangup_call', 'list_chat_channels', 'list_chat_messages', 'list_shortlinks', 'list_ussd_sessions', 'list_voice_agents', 'list_webhook_deliveries', 'place_call', 'register_push_device', 'request_otp', 'search_logs', 'send_bulk_sms', 'send_chat_message', 'send_email', 'send_messenger_message', 'send_push', 'send_sms', 'simulate_ussd_session']);
    const tools = (await all.listTools()).tools;
    const send = tools.find((x) => x.name === 'send_sms')!;
    t.equal(send.annotations?.readOnlyHint, false);
    t.equal(send.annotations?.destructiveHint, false);
    t.ok((send.inputSchema.properties as Record<string, unknown>).idempotencyKey, 'sends take an idempotency key');
    t.equal(tools.find((x) => x.name === 'get_sms_status')!.annotations?.readOnlyHint, true);
    t.notOk(tools.some((x) => x.name.includes('verify')), 'no tool verifies a code');
    const narrow = await mcpClient(t, d.api, full.token, '?products=sms,otp');
    t.same((await narrow.listTools()).tools.map((x) => x.name).sort(), ['get_sms_status', 'request_otp', 'send_bulk_sms', 'send_sms']);
    const limited = await mcpClient(t, d.api, smsOnly.token);
    t.same((await limited.listTools()).tools.map((x) => x.name).sort(), ['get_sms_status', 'send_bulk_sms', 'send_sms']);
    // A tool outside the key's scopes is refused with Ferry's code even when named directly.
    const refused = await limited.callTool({ name: 'get_balance', arguments: {} });
    t.equal(refused.isError, true);
    t.equal(structured(refused).code, 'INSUFFICIENT_SCOPE');
  });

  t.test('send_sms reaches the SMSC simulator and its status reads back; idempotency key honoured', async (t) => {
    const client = await mcpClient(t, d.api, full.token);
    const sim = simulatorOf(d.daemon)!.simulator;
    const res = await client.callTool({ name: 'send_sms', arguments: { to: '0241230001', from: 'Ferry', message: 'hello from an agent', idempotencyKey: 'agent-1' } });
    t.notOk(res.isError, JSON.stringify(res));
    const sent = structured(res);
    t.equal(sent.code, 'SMS_SENT');
    const messageId = sent.data.messageId as string;
    t.match(messageId, /^msg_/);
    const again = await client.callTool({ name: 'send_sms', arguments: { to: '0241230001', from: 'Ferry', message: 'hello from an agent', idempotencyKey: 'agent-1' } });
    t.equal(structured(again).data.messageId, messageId, 'the retry answers the first send');
    const until = Date.now() + 10_000;
    let status = '';
    while (Date.now() < until) {
      const st = await client.callTool({ name: 'get_sms_status', arguments: { messageId } });
      t.notOk(st.isError);
      status = structured(st).data.status;
      if (status === 'delivered') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    t.equal(status, 'delivered');
    t.equal(sim.received().filter((m) => m.destinations[0] === '233241230001').length, 1, 'the simulator got it once');
    const sessions = await client.callTool({ name: 'list_ussd_sessions', arguments: { limit: 5 } });
    t.notOk(sessions.isError, 'a product tool (USSD) reaches its REST route');
    t.ok(Array.isArray(structured(sessions).data.sessions), "the sessions page comes back as data");
    const link = await client.callTool({ name: 'create_shortlink', arguments: { url: 'https://example.com/spring', utm: { source: 'agent' } } });
    t.notOk(link.isError, 'create_shortlink creates through the REST route');
    t.match(structured(link).data.shortUrl, /^https?:\/\/.+\/[A-Za-z0-9]+$/);
    const stats = await client.callTool({ name: 'get_shortlink_analytics', arguments: { linkId: structured(link).data.id, groupBy: 'country' } });
    t.equal(structured(stats).data.total, 0, 'analytics of the new link: no clicks yet');
    const bad = await client.callTool({ name: 'create_shortlink', arguments: { url: 'ftp://example.com/x' } });
    t.equal(structured(bad).code, 'VALIDATION_ERROR', "a refused link comes back as a tool error with Ferry's code");
    const wa = await client.callTool({ name: 'send_messenger_message', arguments: { to: '447700900123', type: 'template', template: { name: 'hello_world', language: 'en_US' }, idempotencyKey: 'agent-wa-1' } });
    t.notOk(wa.isError, 'send_messenger_message accepted through the REST route');
    const waAgain = await client.callTool({ name: 'send_messenger_message', arguments: { to: '447700900123', type: 'template', template: { name: 'hello_world', language: 'en_US' }, idempotencyKey: 'agent-wa-1' } });
    t.equal(structured(waAgain).data.messageId, structured(wa).data.messageId, 'the idempotency key reaches the REST route');
    const waStatus = await client.callTool({ name: 'get_messenger_status', arguments: { messageId: structured(wa).data.messageId } });
    t.equal(structured(waStatus).data.messageId ?? structured(waStatus).data.id, structured(wa).data.messageId);
    const mail = await client.callTool({ name: 'send_email', arguments: { from: 'agent@nowhere.test', to: ['someone@example.com'], subject: 'Hi', text: 'Hello' } });
    t.equal(structured(mail).code, 'SENDER_DOMAIN_UNKNOWN', "send_email reaches the REST route's checks");
    const bal = await client.callTool({ name: 'get_balance', arguments: {} });
    t.equal(structured(bal).data.accountId, full.accountId);
  });

  t.test('errors are tool errors with Ferry code and message, never a stack', async (t) => {
    const client = await mcpClient(t, d.api, full.token);
    const bad = await client.callTool({ name: 'send_sms', arguments: { to: '0241230001', from: 'this sender is far too long', message: 'x' } });
    t.equal(bad.isError, true);
    t.equal(structured(bad).code, 'INVALID_SENDER_ID');
    t.match((bad.content as Array<{ text: string }>)[0].text, /^INVALID_SENDER_ID: /);
    const missing = await client.callTool({ name: 'get_sms_status', arguments: { messageId: 'msg_nope' } });
    t.equal(structured(missing).code, 'MESSAGE_NOT_FOUND');
    const invalid = await client.callTool({ name: 'send_sms', arguments: { to: '0241230001' } });
    t.equal(structured(invalid).code, 'VALIDATION_ERROR');
    t.notMatch(JSON.stringify([bad, missing, invalid]), /\bat [^ ]+ \(|\.ts:\d+/, 'no stack');
    const otp = await client.callTool({ name: 'request_otp', arguments: { phone: '0241230002', from: 'Ferry', message: 'no placeholder' } });
    t.equal(structured(otp).code, 'VALIDATION_ERROR');
  });

  t.test('no credentials is 401; a bad Host or Origin is refused; GET is 405 (stateless)', async (t) => {
    const anon = await call(d.api, 'POST', '/mcp', { body: { jsonrpc: '2.0', id: 1, method: 'tools/list' }, headers: { accept: 'application/json, text/event-stream' } });
    t.equal(anon.status, 401);
    t.equal(anon.json.code, 'AUTH_HEADER_MISSING');
    const client = new Client({ name: 'anon', version: '1' });
    await t.rejects(client.connect(new StreamableHTTPClientTransport(new URL(`${d.api}/mcp`))), 'the SDK client without a key fails to connect');
    const evil = await postWithHost(d.api, 'attacker.example:80', full.token);
    t.equal(evil.status, 403);
    t.equal(JSON.parse(evil.body).code, 'MCP_HOST_NOT_ALLOWED');
    const good = await postWithHost(d.api, `localhost:${new URL(d.api).port}`, full.token);
    t.equal(good.status, 200, good.body);
    const origin = await call(d.api, 'POST', '/mcp', { token: full.token, body: {}, headers: { origin: 'https://attacker.example' } });
    t.equal(origin.json.code, 'MCP_HOST_NOT_ALLOWED');
    const get = await call(d.api, 'GET', '/mcp', { token: full.token });
    t.equal(get.status, 405);
  });

  t.test('tool calls are in the request logs under the key', async (t) => {
    const client = await mcpClient(t, d.api, full.token);
    const res = await client.callTool({ name: 'get_balance', arguments: {} });
    const requestId = structured(res).requestId as string;
    const until = Date.now() + 10_000;
    for (;;) {
      const found = await client.callTool({ name: 'search_logs', arguments: { requestId } });
      const items = structured(found).data.items as Array<{ userAgent: string; keyId: string }>;
      if (items.length) {
        t.match(items[0].userAgent, /^ferry-mcp\//);
        t.equal(items[0].keyId, full.keyId);
        break;
      }
      if (Date.now() > until) throw new Error('not logged');
      await new Promise((r) => setTimeout(r, 20));
    }
  });
});

t.test('two instances sharing storage answer one client alternately', { skip: process.env.DATABASE_URL ? false : 'several instances share a Postgres server; the embedded database is one process' }, async (t) => {
  const secret = randomBytes(32).toString('base64');
  const a = await startDaemon({ FERRY_SECURITY_SECRET_KEY: secret, FERRY_SMPP_SIMULATOR_RECEIPT_DELAY_MS: '20' });
  t.teardown(() => a.stop());
  const b = await startDaemon({
    FERRY_SECURITY_SECRET_KEY: secret,
    FERRY_SMPP_SIMULATOR_RECEIPT_DELAY_MS: '20',
    DATABASE_URL: a.reuse.env.DATABASE_URL,
    ...(a.reuse.env.FERRY_REDIS_KEY_PREFIX ? { FERRY_REDIS_KEY_PREFIX: a.reuse.env.FERRY_REDIS_KEY_PREFIX } : {}),
  });
  t.teardown(() => b.stop());
  const acme = await customer(a, 'acme');
  // Every HTTP request of the client goes to the other instance than the one before.
  const bases = [a.api, b.api];
  const served = [0, 0];
  let turn = 0;
  const alternate: typeof fetch = (input, init) => {
    const i = turn++ % 2;
    served[i]++;
    const url = new URL(String(input instanceof Request ? input.url : input));
    const target = new URL(bases[i]);
    url.host = target.host;
    return fetch(url, init);
  };
  const transport = new StreamableHTTPClientTransport(new URL(`${a.api}/mcp`), { fetch: alternate, requestInit: { headers: { authorization: `Basic ${acme.token}` } } });
  const client = new Client({ name: 'alternating', version: '1.0.0' });
  await client.connect(transport);
  t.teardown(() => client.close());
  t.ok((await client.listTools()).tools.some((x) => x.name === 'send_sms'));
  const sent = structured(await client.callTool({ name: 'send_sms', arguments: { to: '0241239999', from: 'Ferry', message: 'two instances' } }));
  t.equal(sent.code, 'SMS_SENT');
  let status = '';
  for (let i = 0; i < 200 && status !== 'delivered'; i++) {
    status = structured(await client.callTool({ name: 'get_sms_status', arguments: { messageId: sent.data.messageId } })).data.status;
    if (status !== 'delivered') await new Promise((r) => setTimeout(r, 50));
  }
  t.equal(status, 'delivered', 'sent through one instance, read back through both');
  t.ok(served[0] >= 2 && served[1] >= 2, `both instances answered (${served.join(' / ')})`);
});
