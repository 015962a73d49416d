import t from 'tap';
import { VERSION } from '../../src/version.js';
import { accountWithKey, call, startDaemon, simulatorOf } from '../helpers/daemon.js';
import { backendLabel } from '../helpers/env.js';

t.test(`bad input gets clear envelope errors and the process stays up (${backendLabel})`, async (t) => {
  const d = await startDaemon({ FERRY_HTTP_BODY_LIMIT_BYTES: '4096' });
  t.teardown(() => d.stop());
  const { token } = await accountWithKey(d, 'errs');
  const admin = { authorization: `Bearer ${d.adminToken}` };

  const unknown = await call(d.api, 'GET', '/v1/nope', { token });
  t.equal(unknown.status, 404);
  t.equal(unknown.json.code, 'NOT_FOUND');
  t.equal(unknown.json.success, false);
  t.match(unknown.json.requestId, /^req_/);

  const badJson = await call(d.admin, 'POST', '/admin/accounts', { raw: '{"name": ', headers: { ...admin, 'content-type': 'application/json' } });
  t.equal(badJson.status, 400);
  t.equal(badJson.json.code, 'INVALID_JSON');

  const huge = await call(d.admin, 'POST', '/admin/accounts', { raw: JSON.stringify({ name: 'x'.repeat(10_000) }), headers: { ...admin, 'content-type': 'application/json' } });
  t.equal(huge.status, 413);
  t.equal(huge.json.code, 'PAYLOAD_TOO_LARGE');

  const deep = '['.repeat(2000) + ']'.repeat(2000);
  const nested = await call(d.admin, 'POST', '/admin/accounts', { raw: deep, headers: { ...admin, 'content-type': 'application/json' } });
  t.equal(nested.status, 400, 'deeply nested body is a validation error');

  const media = await call(d.admin, 'POST', '/admin/accounts', { raw: 'name=x', headers: { ...admin, 'content-type': 'application/x-www-form-urlencoded' } });
  t.equal(media.status, 415);
  t.equal(media.json.code, 'UNSUPPORTED_MEDIA_TYPE');

  const invalid = await call(d.admin, 'POST', '/admin/accounts', { body: { name: 5, currency: 'DOLLARS', extra: true }, headers: admin });
  t.equal(invalid.status, 400);
  t.equal(invalid.json.code, 'VALIDATION_ERROR');
  const fields = invalid.json.data.errors.map((e: { field: string }) => e.field).sort();
  t.same(fields, ['currency', 'extra', 'name'], 'every bad field is reported, by name');

  const dup = await call(d.admin, 'POST', '/admin/accounts', { body: { name: 'errs' }, headers: admin });
  t.equal(dup.status, 409);
  t.equal(dup.json.code, 'ACCOUNT_EXISTS');

  const missingAccount = await call(d.admin, 'GET', '/admin/accounts/ghost', { headers: admin });
  t.equal(missingAccount.status, 404);
  t.equal(missingAccount.json.code, 'ACCOUNT_NOT_FOUND');

  const noAdmin = await call(d.admin, 'GET', '/admin/accounts');
  t.equal(noAdmin.status, 401);
  t.equal(noAdmin.json.code, 'ADMIN_UNAUTHORIZED');
  const wrongAdmin = await call(d.admin, 'GET', '/admin/accounts', { headers: { authorization: 'Bearer fat_wrong' } });
  t.equal(wrongAdmin.status, 401);

  const headerAbuse = await call(d.api, 'GET', '/v1/health', { headers: { authorization: 'Basic ' + 'A'.repeat(5000) } });
  t.equal(headerAbuse.status, 401);

  t.equal((await call(d.api, 'GET', '/v1/health', { token })).status, 200, 'still serving after all of that');
});

t.test(`OpenAPI document, metrics and probes (${backendLabel})`, async (t) => {
  const d = await startDaemon();
  t.teardown(() => d.stop());
  const { token } = await accountWithKey(d, 'docs');
  await call(d.api, 'GET', '/v1/health', { token });

  const doc = await call(d.api, 'GET', '/v1/openapi.json');
  t.equal(doc.status, 200);
  t.equal(doc.json.openapi, '3.0.3');
  t.equal(doc.json.info.version, VERSION);
  t.match(doc.json.servers[0].url, /\/v1$/);
  t.ok(doc.json.paths['/health'].get, 'paths are relative to the /v1 server');
  t.ok(doc.json.paths['/account/balance'].get);
  t.match(doc.json.info.description, /INSUFFICIENT_SCOPE \| 403/, 'the error catalogue is documented');
  t.ok(doc.json.components.securitySchemes.basicAuth);

  const metrics = await call(d.admin, 'GET', '/metrics');
  t.equal(metrics.status, 200);
  t.match(metrics.text, /ferry_http_request_duration_seconds_bucket\{[^}]*route="\/v1\/health"[^}]*status="200"/);
  t.match(metrics.text, /ferry_backend_up\{backend="database"\} 1/);
  t.match(metrics.text, /ferry_process_resident_memory_bytes/);
  t.notMatch(metrics.text, /sk_/, 'no secret in metrics');

  const live = await call(d.admin, 'GET', '/livez');
  t.equal(live.status, 200);
  const ready = await call(d.admin, 'GET', '/readyz');
  t.equal(ready.status, 200);
  t.equal(ready.json.checks.database.ok, true);
});

t.test(`with no upstream configured an embedded simulator runs, and says so (${backendLabel})`, async (t) => {
  const d = await startDaemon();
  t.teardown(() => d.stop());
  t.ok(simulatorOf(d.daemon), 'embedded upstream started');
  const ready = await call(d.admin, 'GET', '/readyz');
  t.equal(ready.status, 200);
  t.match(ready.json.warnings.join(' '), /NOTHING LEAVES THIS MACHINE/);

  const off = await startDaemon({ FERRY_SMPP_SIMULATOR_ENABLED: 'off' });
  t.teardown(() => off.stop());
  t.equal(simulatorOf(off.daemon), null);
  const offReady = (await call(off.admin, 'GET', '/readyz')).json;
  t.same(offReady.upstreams, [], 'no upstream at all');
  t.match(offReady.warnings.join(' '), /NO UPSTREAM: the embedded simulator is not started \(smpp.simulator.enabled is off\); messages are refused with NO_ROUTE/, 'and it says so');
});
