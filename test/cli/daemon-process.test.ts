import t from 'tap';
import { createServer } from 'node:net';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { call, ferryRun, startDaemonProcess, testEnv } from '../helpers/daemon.js';
import { backendLabel } from '../helpers/env.js';

// Each `ferry` call here is a process that loads the CLI (the compiled one when dist/ is fresh, else through tsx:
// seconds each on a 2-core machine): the file's bound is set for that, above the suite's default.
t.setTimeout(420_000);

t.test(`ferry start, the CLI against it, and a clean SIGTERM (${backendLabel})`, async (t) => {
  const { env, store } = await testEnv();
  t.teardown(() => store.cleanup());
  const p = await startDaemonProcess(env);
  t.teardown(() => p.child.kill('SIGKILL'));
  const cli = { ...env, FERRY_ADMIN_URL: p.admin };

  const created = await ferryRun(['accounts', 'create', 'acme', '--smpp-password', 'pw12345', '--json'], cli);
  t.equal(created.code, 0, created.stderr);
  const account = JSON.parse(created.stdout);
  t.equal(account.name, 'acme');
  t.equal(account.smpp.systemId, 'acme');
  t.equal(account.smpp.password, 'pw12345');

  const key = await ferryRun(['keys', 'create', '--account', 'acme', '--scopes', 'all', '--json'], cli);
  t.equal(key.code, 0, key.stderr);
  const k = JSON.parse(key.stdout);
  t.match(k.keyId, /^ak_live_/);
  t.match(k.secret, /^sk_/);
  t.equal(k.token, Buffer.from(`${k.keyId}:${k.secret}`).toString('base64'));

  t.equal((await call(p.api, 'GET', '/v1/health', { token: k.token })).status, 200, 'the printed token works');
  t.equal((await call(p.api, 'GET', '/v1/health', { token: Buffer.from(`${k.keyId}:wrong`).toString('base64') })).status, 401);

  const narrow = JSON.parse((await ferryRun(['keys', 'create', '--account', 'acme', '--scopes', 'sms:send', '--json'], cli)).stdout);
  t.equal((await call(p.api, 'GET', '/v1/account/balance', { token: narrow.token })).status, 403, 'a key without the scope gets 403');

  const credit = await ferryRun(['accounts', 'credit', 'acme', '25', '--json'], cli);
  t.equal(JSON.parse(credit.stdout).balance, 25);
  const show = await ferryRun(['accounts', 'show', 'acme'], cli);
  t.match(show.stdout, /balance\s+25/);
  t.notMatch(show.stdout, /pw12345/, 'show never prints the SMPP password');

  const badScope = await ferryRun(['keys', 'create', '--account', 'acme', '--scopes', 'sms:fly'], cli);
  t.not(badScope.code, 0);
  t.match(badScope.stderr, /VALIDATION_ERROR/);

  const logs = p.output.join('\n');
  t.notMatch(logs, new RegExp(k.secret), 'the secret never reaches the log');
  t.notMatch(logs, /pw12345/);

  p.child.kill('SIGTERM');
  const exit = await p.exited;
  t.equal(exit.code, 0, 'SIGTERM: exit 0');
  t.ok(p.output.some((l) => l.includes('ferry stopped')));
});

t.test('start-up failures exit non-zero with one line naming the cause', async (t) => {
  const blocker = createServer();
  await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
  t.teardown(() => blocker.close());
  const port = (blocker.address() as { port: number }).port;

  const { env, store } = await testEnv();
  t.teardown(() => store.cleanup());
  const taken = await ferryRun(['start'], { ...env, FERRY_HTTP_PORT: String(port) });
  t.equal(taken.code, 1);
  t.match(taken.stderr, new RegExp(`ferry: http listener: 127.0.0.1:${port} is already in use`));

  const badConfig = await ferryRun(['start'], { ...env, FERRY_HTTP_PORT: 'eighty', FERRY_LOG_LEVEL: 'loud' });
  t.equal(badConfig.code, 1);
  t.match(badConfig.stderr, /invalid configuration: .*http\.port.*log\.level|invalid configuration: .*log\.level.*http\.port/);

  const noDb = await ferryRun(['start'], { ...env, DATABASE_URL: 'postgres://postgres@127.0.0.1:1/nowhere' });
  t.equal(noDb.code, 1);
  t.match(noDb.stderr, /database unreachable at postgres:\/\/postgres@127\.0\.0\.1:1\/nowhere/);

  const noRedis = await ferryRun(['start'], { ...env, REDIS_URL: 'redis://:hunter2@127.0.0.1:1' });
  t.equal(noRedis.code, 1);
  t.match(noRedis.stderr, /redis/i);
  t.notMatch(noRedis.stderr, /hunter2/, 'the password is not printed');

  // Process roles: a split role on the embedded stores, and an unknown role (--role over FERRY_ROLE).
  const embedded = { ...env, DATABASE_URL: '', REDIS_URL: '' };
  const split = await ferryRun(['start', '--role', 'workers'], embedded);
  t.equal(split.code, 1);
  t.match(split.stderr, /ferry: role workers runs only part of Ferry, and split roles need shared stores/);
  const unknownRole = await ferryRun(['start', '--role', 'api,web'], { ...embedded, FERRY_ROLE: 'all' });
  t.equal(unknownRole.code, 1);
  t.match(unknownRole.stderr, /ferry: roles: unknown role web/);
});

t.test('the admin token is generated into the data folder, mode 0600', async (t) => {
  const { env, store } = await testEnv();
  t.teardown(() => store.cleanup());
  const p = await startDaemonProcess(env);
  t.teardown(() => p.child.kill('SIGKILL'));
  const { statSync } = await import('node:fs');
  const file = join(store.dataDir, 'admin.token');
  t.equal(statSync(file).mode & 0o777, 0o600);
  t.match(readFileSync(file, 'utf8'), /^fat_/);
  // The CLI finds the token by itself through the data folder.
  const list = await ferryRun(['accounts', 'list', '--json'], { ...env, FERRY_ADMIN_URL: p.admin });
  t.equal(list.code, 0, list.stderr);
  t.same(JSON.parse(list.stdout), []);
  p.child.kill('SIGTERM');
  await p.exited;
});
