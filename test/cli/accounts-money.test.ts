// `ferry accounts credit|debit|update --credit-limit` against a daemon process: amounts are checked before anything is
// sent, refusals exit 2 with the error code, and the daemon logs each action with the CLI's actor; `ferry messages
// show` prints ISO 8601 times.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { sanitiseActorName } from '../../src/admin/audit.js';
import { cliActor } from '../../src/cli/admin-client.js';
import { call, ferryRun, ferryRunEach, startDaemonProcess, testEnv } from '../helpers/daemon.js';
import { backendLabel } from '../helpers/env.js';

// Each `ferry` call here is a process that loads the CLI (the compiled one when dist/ is fresh, else through tsx:
// seconds each on a 2-core machine): the file's bound is set for that, above the suite's default.
t.setTimeout(420_000);

t.test(`credit, debit and credit limits through the CLI (${backendLabel})`, async (t) => {
  const { env, store } = await testEnv();
  t.teardown(() => store.cleanup());
  const p = await startDaemonProcess(env);
  t.teardown(() => p.child.kill('SIGKILL'));
  const cli = { ...env, FERRY_ADMIN_URL: p.admin };
  const ferry = (...args: string[]) => ferryRun(args, cli);
  // Read over HTTP, not with another CLI process: each of those costs a second of start-up.
  const adminToken = readFileSync(join(store.dataDir, 'admin.token'), 'utf8').trim();
  const balance = async () => (await call(p.admin, 'GET', '/admin/accounts/acme', { headers: { authorization: `Bearer ${adminToken}` } })).json.data.balance as number;

  const created = await ferry('accounts', 'create', 'acme', '--smpp-password', 'Cl1pw99', '--json');
  t.equal(created.code, 0, created.stderr);

  // Refused before anything is sent (all but the decimal places, which need the account currency, are checked offline).
  const refused: Array<[string[], RegExp]> = [
    [['credit', '1e308'], /^ferry: INVALID_AMOUNT: AMOUNT must be at most 9007199254\.740991$/m],
    [['credit', 'Infinity'], /^ferry: INVALID_AMOUNT: AMOUNT must be a decimal number such as 12\.50, got "Infinity"$/m],
    [['credit', 'NaN'], /^ferry: INVALID_AMOUNT: AMOUNT must be a decimal number/m],
    [['credit', '0'], /^ferry: INVALID_AMOUNT: AMOUNT must be greater than zero$/m],
    [['credit', '0.0000001'], /^ferry: INVALID_AMOUNT: AMOUNT must have at most 2 decimal places in USD$/m],
    [['credit', '12.345'], /^ferry: INVALID_AMOUNT: AMOUNT must have at most 2 decimal places in USD$/m],
    [['credit', '-9900'], /^ferry: INVALID_AMOUNT: AMOUNT must be positive; to take credit away, use `ferry accounts debit NAME AMOUNT`$/m],
    [['debit', '-5'], /^ferry: INVALID_AMOUNT: AMOUNT must be positive; to add credit, use `ferry accounts credit NAME AMOUNT`$/m],
    [['debit', '1e308'], /INVALID_AMOUNT/],
    [['debit', '1', '--reason', 'a', '--reference', 'b'], /^ferry: give --reason or --reference, not both$/m],
    [['update', '--credit-limit', '-1'], /^ferry: INVALID_AMOUNT: --credit-limit must be positive$/m],
    // Checked by the daemon: the CLI does not read the currency for an update.
    [['update', '--credit-limit', '0.001'], /^ferry: INVALID_AMOUNT: creditLimit must have at most 2 decimal places in USD$/m],
  ];
  // Independent of each other: run side by side (one per core), which halves the wait for the CLI processes.
  const answers = await ferryRunEach(refused.map(([args]) => ['accounts', args[0], 'acme', ...args.slice(1)]), cli);
  for (const [i, [args, message]] of refused.entries()) {
    const r = answers[i];
    const what = args.join(' ');
    t.equal(r.code, 2, `${what}: exit 2`);
    t.match(r.stderr, message, `${what}: ${message}`);
    t.equal(r.stdout, '', 'nothing printed as a result');
  }
  t.equal(await balance(), 0, 'none of them moved the balance');
  t.equal((await call(p.admin, 'GET', '/admin/accounts/acme', { headers: { authorization: `Bearer ${adminToken}` } })).json.data.creditLimit, 0, 'nor the limit');

  const credit = await ferry('accounts', 'credit', 'acme', '25', '--reason', 'INV-1', '--json');
  t.equal(credit.code, 0, credit.stderr);
  t.match(JSON.parse(credit.stdout), { balance: 25, transaction: { kind: 'credit', amount: 25, reference: 'INV-1' } });
  const debit = await ferry('accounts', 'debit', 'acme', '10.50', '--reason', 'duplicate top-up');
  t.equal(debit.code, 0, debit.stderr);
  t.match(debit.stdout, /^balance\s+14\.5$/m, 'printed for people');
  const over = await ferry('accounts', 'debit', 'acme', '20');
  t.equal(over.code, 2);
  t.match(over.stderr, /^ferry: CREDIT_LIMIT_EXCEEDED: A debit of 20 USD would take the balance of acme to -5\.5, below zero \(it has no credit limit\); at most 14\.5 can be debited now$/m);

  // The credit limit.
  const limit = await ferry('accounts', 'update', 'acme', '--credit-limit', '50', '--json');
  t.equal(limit.code, 0, limit.stderr);
  t.equal(JSON.parse(limit.stdout).creditLimit, 50);
  t.equal((await ferry('accounts', 'debit', 'acme', '64.5')).code, 0, 'within the limit');
  t.equal(await balance(), -50);
  const beyond = await ferry('accounts', 'debit', 'acme', '0.01');
  t.equal(beyond.code, 2, 'beyond the limit');
  t.match(beyond.stderr, /CREDIT_LIMIT_EXCEEDED: .*below its credit limit of 50 \(-50\); at most 0 can be debited now/);

  // Concurrent debits from several CLI processes stop at the limit too.
  t.equal((await ferry('accounts', 'credit', 'acme', '51')).code, 0);
  t.equal((await ferry('accounts', 'update', 'acme', '--credit-limit', '0')).code, 0, 'no overdraft any more');
  const racing = await Promise.all(Array.from({ length: 4 }, () => ferry('accounts', 'debit', 'acme', '0.75')));
  t.equal(racing.filter((r) => r.code === 0).length, 1, '1 available: one debit of 0.75 fits');
  t.equal(racing.filter((r) => r.code === 2 && /CREDIT_LIMIT_EXCEEDED/.test(r.stderr)).length, 3);
  t.equal(await balance(), 0.25);

  // The daemon logged each action with the request id and the CLI's actor; no secret reached the log.
  const actor = `admin/${sanitiseActorName(cliActor())}@127.0.0.1`;
  const logged = p.output.flatMap((l) => {
    try {
      return [JSON.parse(l) as { event?: string; actor?: string; reqId?: string; amount?: number; balance?: number; level: string }];
    } catch {
      return [];
    }
  });
  const events = logged.filter((l) => l.event);
  t.same(
    events.map((l) => l.event),
    ['account.created', 'account.credited', 'account.debited', 'account.updated', 'account.debited', 'account.credited', 'account.updated', 'account.debited'],
    'one line per action that happened',
  );
  t.ok(events.every((l) => l.actor === actor && /^req_/.test(l.reqId ?? '') && l.level === 'info'), `each with ${actor} and its request id`);
  t.match(events[2], { amount: -10.5, balance: 14.5 });
  const all = p.output.join('\n');
  t.notMatch(all, /Cl1pw99/, 'the SMPP password never reaches the log');

  // messages show: ISO 8601 times, like every other command.
  const key = JSON.parse((await ferry('keys', 'create', '--account', 'acme', '--scopes', 'all', '--json')).stdout);
  t.notMatch(p.output.join('\n'), new RegExp(key.secret), 'nor the key secret');
  const sent = await call(p.api, 'POST', '/v1/sms/send', { token: key.token, body: { to: '+233541234567', from: 'Ferry', message: 'iso times' } });
  t.equal(sent.status, 200, sent.text);
  const id = sent.json.data.messageId ?? sent.json.data.id;
  const [show, shownJson] = await Promise.all([ferry('messages', 'show', id), ferry('messages', 'show', id, '--json')]);
  t.equal(show.code, 0, show.stderr);
  t.match(show.stdout, /^\s*createdAt\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/m);
  t.match(show.stdout, /^\s*updatedAt\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/m);
  t.match(show.stdout, /^\s*at\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/m, 'history times too');
  t.notMatch(show.stdout, /\b1\d{12}\b/, 'no epoch milliseconds anywhere');
  const json = JSON.parse(shownJson.stdout);
  t.ok(
    [json.message.createdAt, json.message.updatedAt, ...json.history.map((h: { at: string }) => h.at)].every((v: string) => new Date(v).toISOString() === v),
    'the JSON output carries the same ISO strings',
  );

  // The account's recipient check: strict, possible or off, and "default" to leave it to the route and the ingress.
  const strict = await ferry('accounts', 'update', 'acme', '--number-validation', 'strict', '--json');
  t.equal(strict.code, 0, strict.stderr);
  t.equal(JSON.parse(strict.stdout).numberValidation, 'strict');
  const [back, bogus] = await Promise.all([
    ferry('accounts', 'update', 'acme', '--number-validation', 'default', '--json'),
    ferry('accounts', 'update', 'acme', '--number-validation', 'loose'),
  ]);
  t.equal(back.code, 0, back.stderr);
  t.equal(JSON.parse(back.stdout).numberValidation, null);
  t.not(bogus.code, 0, 'refused before anything is sent');
  t.match(bogus.stderr, /--number-validation must be strict, possible, off or "default", got loose/);

  p.child.kill('SIGTERM');
  t.equal((await p.exited).code, 0);
});
