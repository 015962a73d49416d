// GET /admin/sim/mail/messages and `ferry sim mail messages`: the embedded mail simulator's mailbox, read from the CLI
// of a running daemon (newest first, by recipient, --wait, --json), and refused when no mail simulator runs.
import t from 'tap';
import { accountWithKey, call, ferryRun, startDaemon } from '../helpers/daemon.js';
import { backendLabel } from '../helpers/env.js';

// Each `ferry` call here is a process that loads the CLI (the compiled one when dist/ is fresh, else through tsx:
// seconds each on a 2-core machine): the file's bound is set for that, above the suite's default.
t.setTimeout(420_000);

// A bound, not a measure: on a loaded machine a CLI process (tsx) can take over a minute to start.
const CLI_LIMIT_MS = 300_000;

t.test(`the embedded mail simulator's mailbox through the admin API and the CLI (${backendLabel})`, async (t) => {
  const d = await startDaemon();
  t.teardown(() => d.stop());
  const { token } = await accountWithKey(d, 'mailbox');
  t.equal((await call(d.api, 'POST', '/v1/email/domains', { token, body: { domain: 'example.test' } })).status, 201);
  const env = { FERRY_ADMIN_URL: d.admin, FERRY_ADMIN_TOKEN: d.adminToken };

  const empty = await ferryRun(['sim', 'mail', 'messages'], env, CLI_LIMIT_MS);
  t.equal(empty.code, 0, empty.stderr);
  t.equal(empty.stdout, '(none)\n');

  for (const [to, subject, text] of [
    ['alice@dest.test', 'Welcome', 'Hello Alice'],
    ['bob@dest.test', 'Other', 'Hello Bob'],
    ['alice@dest.test', 'Your code', 'Your code is 123456'],
  ]) {
    const r = await call(d.api, 'POST', '/v1/email/send', { token, body: { from: 'hello@example.test', to: [to], subject, text } });
    t.equal(r.status, 200, r.text);
  }
  // --wait returns as soon as one mail is there; the mail is sent a moment after the API answers.
  const bob = await ferryRun(['sim', 'mail', 'messages', '--to', 'bob@dest.test', '--wait', '20', '--json'], env, CLI_LIMIT_MS);
  t.equal(bob.code, 0, bob.stderr);
  const [m] = JSON.parse(bob.stdout);
  t.match(m, { from: 'hello@example.test', to: ['bob@dest.test'], subject: 'Other', text: 'Hello Bob' });
  t.match(m.returnPath, /^b\+em_[0-9a-z]+-[0-9a-f]{12}@/, 'the envelope sender is the signed VERP return path');

  const until = Date.now() + 20_000;
  let alice: Array<{ subject: string }> = [];
  while (alice.length < 2 && Date.now() < until) {
    alice = (await call(d.admin, 'GET', '/admin/sim/mail/messages?to=alice@dest.test', { headers: { authorization: `Bearer ${d.adminToken}` } })).json.data.messages;
    if (alice.length < 2) await new Promise((r) => setTimeout(r, 50));
  }
  t.same(
    alice.map((x) => x.subject),
    ['Your code', 'Welcome'],
    'newest first, only that recipient',
  );
  const human = await ferryRun(['sim', 'mail', 'messages', '--to', 'alice@dest.test', '--limit', '1'], env, CLI_LIMIT_MS);
  t.equal(human.code, 0, human.stderr);
  t.match(human.stdout, /^\S+Z {2}hello@example\.test -> alice@dest\.test\n {2}Subject: Your code\n {2}Your code is 123456\n$/);

  const none = await ferryRun(['sim', 'mail', 'messages', '--to', 'nobody@dest.test', '--wait', '1'], env, CLI_LIMIT_MS);
  t.equal(none.code, 2, 'waiting for a mail that never comes fails');
  t.match(none.stderr, /no mail to nobody@dest\.test reached the mail simulator within 1 s/);

  const auth = { authorization: `Bearer ${d.adminToken}` };
  t.equal((await call(d.admin, 'GET', '/admin/sim/mail/messages?limit=0', { headers: auth })).json.code, 'VALIDATION_ERROR');
  t.equal((await call(d.admin, 'GET', '/admin/sim/mail/messages?to=nope', { headers: auth })).json.code, 'VALIDATION_ERROR');
  t.equal((await call(d.admin, 'GET', '/admin/sim/mail/messages')).status, 401, 'behind the admin token');
});

t.test('a relay configured: no mail simulator, SIMULATOR_NOT_RUNNING', async (t) => {
  // A relay address nothing listens on: the module starts without the simulator (mail would wait for the relay).
  const d = await startDaemon({ FERRY_EMAIL_SMTP_URL: 'smtp://127.0.0.1:9' });
  t.teardown(() => d.stop());
  const r = await call(d.admin, 'GET', '/admin/sim/mail/messages', { headers: { authorization: `Bearer ${d.adminToken}` } });
  t.equal(r.status, 404);
  t.equal(r.json.code, 'SIMULATOR_NOT_RUNNING');
  const cli = await ferryRun(['sim', 'mail', 'messages'], { FERRY_ADMIN_URL: d.admin, FERRY_ADMIN_TOKEN: d.adminToken }, CLI_LIMIT_MS);
  t.equal(cli.code, 2);
  t.match(cli.stderr, /SIMULATOR_NOT_RUNNING: This daemon runs no embedded mail simulator/);
});
