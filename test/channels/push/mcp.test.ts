// The push tools of the MCP server, through the official SDK's client over Streamable HTTP: register a device, send
// a push (with an idempotency key), read the send; and a key without push:manage does not see the registration tool.
import t, { type Test } from 'tap';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { accountWithKey, call, startDaemon } from '../../helpers/daemon.js';
import { backendLabel } from '../../helpers/env.js';
import { until } from '../../helpers/wait.js';

async function mcpClient(t: Test, base: string, token: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers: { authorization: `Basic ${token}` } } });
  const client = new Client({ name: 'ferry-push-test', version: '1.0.0' });
  await client.connect(transport);
  t.teardown(() => client.close());
  return client;
}

const structured = (r: unknown) => (r as { structuredContent: Record<string, any> }).structuredContent;

t.test(`push through MCP tools (${backendLabel})`, async (t) => {
  const d = await startDaemon({ FERRY_PUSH_SIMULATOR: 'on' });
  t.teardown(() => d.stop());
  const { token } = await accountWithKey(d, 'push-agent');
  const app = await call(d.api, 'POST', '/v1/push/apps', { token, body: { name: 'Agent app' } });
  t.equal(app.status, 201, app.text);
  const client = await mcpClient(t, d.api, token);

  const reg = await client.callTool({ name: 'register_push_device', arguments: { appId: app.json.data.id, token: 'mcp-device-1', platform: 'android', userId: 'u-mcp' } });
  t.notOk(reg.isError, JSON.stringify(reg).slice(0, 300));
  const deviceId = structured(reg).data.id ?? structured(reg).data.device?.id;
  t.match(deviceId, /^pdev_/);

  const sent = await client.callTool({ name: 'send_push', arguments: { to: { userId: 'u-mcp' }, notification: { title: 'From an agent' }, idempotencyKey: 'mcp-push-1' } });
  t.notOk(sent.isError, JSON.stringify(sent).slice(0, 300));
  const pushId = structured(sent).data.pushId as string;
  t.match(pushId, /^push_/);
  const again = await client.callTool({ name: 'send_push', arguments: { to: { userId: 'u-mcp' }, notification: { title: 'From an agent' }, idempotencyKey: 'mcp-push-1' } });
  t.equal(structured(again).data.pushId, pushId, 'the same idempotency key answers the first send');

  const read = await until(
    async () => structured(await client.callTool({ name: 'get_push_send', arguments: { pushId } })).data,
    (s) => s?.status === 'completed',
    20_000,
  );
  t.match(read, { targeted: 1, sent: 1, target: { kind: 'user', value: 'u-mcp' } });
  t.equal(read.outcomes[0].deviceId, deviceId);

  // The operations are in the OpenAPI description, under the product's tag.
  const doc = (await call(d.api, 'GET', '/v1/openapi.json')).json;
  for (const path of ['/push/apps', '/push/devices', '/push/topics/{name}/subscriptions', '/push/send', '/push/sends/{pushId}']) {
    t.ok(doc.paths[path], `${path} is described`);
  }
  t.ok(doc.paths['/push/send'].post.tags.includes('push'), 'under the push tag');

  const sendOnly = await accountWithKey(d, 'push-agent-send', ['push:send']);
  const narrow = await mcpClient(t, d.api, sendOnly.token);
  const names = (await narrow.listTools()).tools.map((x) => x.name);
  t.ok(names.includes('send_push') && !names.includes('register_push_device'), 'tools follow the key\'s scopes');
});
