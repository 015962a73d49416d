import t, { type Test } from 'tap';
import { CommandStatus } from '../../../src/smpp/constants.js';
import type { CooldownPolicy } from '../../../src/store/types.js';
import { openTestBackends } from '../../helpers/backends.js';
import { call, startDaemon } from '../../helpers/daemon.js';
import { backendLabel } from '../../helpers/env.js';
import { CustomerClient } from './customer-client.js';
import { customerFixture, type CustomerFixture, type Teardown } from './customer-fixture.js';

// The cool-downs run on the test clock: the test moves it instead of waiting.
const env = await openTestBackends();
t.teardown(() => env.cleanup());
const { clock } = env;
const POLICY: CooldownPolicy = { threshold: 3, firstMs: 1000, maxMs: 4000, forgetMs: 60_000 };
const OTHER = '127.0.0.2';

async function guarded(t: Teardown): Promise<CustomerFixture> {
  return customerFixture(t, { bindGuard: { cooldowns: env.backends.cooldowns, policy: POLICY } });
}

/** One bind on a fresh connection; returns its command_status. */
async function bindStatus(f: CustomerFixture, systemId: string, password: string, localAddress?: string): Promise<number> {
  const { client, resp } = await CustomerClient.bound(f.server.ports.plain, 'transceiver', systemId, password, { localAddress });
  await client.close();
  return resp.command_status;
}

const { ESME_ROK, ESME_RBINDFAIL } = CommandStatus;

/**
 * Every refusal answers ESME_RBINDFAIL, so the reason the server logged (debug included) tells a wrong password
 * from a cool-down: 'ok' for a bind, else that reason. Fails the test when a refusal is not ESME_RBINDFAIL.
 */
async function outcome(t: Test, f: CustomerFixture, systemId: string, password: string, localAddress?: string): Promise<string> {
  const before = f.logs.length;
  const status = await bindStatus(f, systemId, password, localAddress);
  if (status === ESME_ROK) return 'ok';
  t.equal(status, ESME_RBINDFAIL, 'one answer for every refusal');
  const line = f.logs.slice(before).find((l) => l.msg === 'customer bind refused');
  return String(line?.reason);
}

t.test(`failed binds cool one (address, system_id) down (${backendLabel})`, async (t) => {
  const f = await guarded(t);
  const acme = await f.account('acme', { password: 'secret12' });

  const wrong = [];
  for (let i = 0; i < 3; i++) wrong.push(await outcome(t, f, 'acme', `bad${i}`));
  t.same(wrong, ['wrong_password', 'wrong_password', 'wrong_password'], 'the failures up to the threshold are checked as usual');
  t.equal(await outcome(t, f, 'acme', acme.password), 'cooling_down', 'during the cool-down the right password is refused');
  t.equal(await bindStatus(f, 'acme', 'bad9'), ESME_RBINDFAIL, 'and a wrong one gets the same answer: no oracle');
  t.equal(await bindStatus(f, 'acme', acme.password, OTHER), ESME_ROK, 'another address binds the same system_id as usual');

  t.equal(await f.metric('ferry_smpp_bind_cooldowns_total'), 1, 'one cool-down started');
  t.equal(await f.metric('ferry_smpp_customer_bind_failures_total', { reason: 'cooling_down' }), 2);
  const started = f.logs.filter((l) => l.level === 'warn' && l.cooldownMs !== undefined);
  t.equal(started.length, 1, 'one warning per cool-down start');
  t.match(started[0], { remote: '127.0.0.1', systemId: 'acme', failures: 3, cooldownMs: 1000 });
  t.match(String(started[0].msg), /127\.0\.0\.1/, 'the line names the address');
  t.notOk(f.logText().includes('secret12'), 'no password reaches the log');
  const m = await f.registry.metrics();
  t.notMatch(m, /ferry_smpp_bind_cooldowns_total\{/, 'no labels: never the address');

  clock.advance(POLICY.firstMs);
  t.equal(await bindStatus(f, 'acme', acme.password), ESME_ROK, 'after the cool-down the right password binds');
  // The success reset the count: without it the next failure (the fourth) would start a 2 s cool-down.
  t.equal(await outcome(t, f, 'acme', 'bad10'), 'wrong_password');
  t.equal(await bindStatus(f, 'acme', acme.password), ESME_ROK, 'a success resets the count');
});

t.test(`each further failure doubles the cool-down, up to the cap (${backendLabel})`, async (t) => {
  const f = await guarded(t);
  const acc = await f.account('doubler', { password: 'secret12' });
  for (let i = 0; i < 3; i++) await bindStatus(f, 'doubler', `bad${i}`);
  clock.advance(1000);
  t.equal(await outcome(t, f, 'doubler', 'bad3'), 'wrong_password', 'the fourth failure is checked once the first cool-down ends');
  clock.advance(1999);
  t.equal(await bindStatus(f, 'doubler', acc.password), ESME_RBINDFAIL, 'its cool-down is 2 s');
  clock.advance(1);
  t.equal(await outcome(t, f, 'doubler', 'bad4'), 'wrong_password');
  clock.advance(3999);
  t.equal(await bindStatus(f, 'doubler', acc.password), ESME_RBINDFAIL, 'then 4 s');
  clock.advance(1);
  t.equal(await outcome(t, f, 'doubler', 'bad5'), 'wrong_password');
  clock.advance(POLICY.maxMs);
  t.equal(await bindStatus(f, 'doubler', acc.password), ESME_ROK, 'capped at 4 s');
  t.equal(await f.metric('ferry_smpp_bind_cooldowns_total'), 4);
});

t.test(`an allow-listed address is not cooled down by another address's failures (${backendLabel})`, async (t) => {
  const f = await guarded(t);
  const listed = await f.account('listed', { password: 'secret12', allowedIps: [OTHER] });
  for (let i = 0; i < 3; i++) await bindStatus(f, 'listed', `bad${i}`);
  t.equal(await bindStatus(f, 'listed', listed.password), ESME_RBINDFAIL, '127.0.0.1 (not listed) is cooling down');
  t.equal(await bindStatus(f, 'listed', listed.password, OTHER), ESME_ROK, 'the listed address binds');
  t.equal(await f.metric('ferry_smpp_customer_bind_failures_total', { reason: 'cooling_down' }), 1);
});

t.test(`parallel guesses are counted one by one (${backendLabel})`, async (t) => {
  const f = await guarded(t);
  await f.account('burst', { password: 'secret12' });
  const statuses = await Promise.all(Array.from({ length: 10 }, (_, i) => bindStatus(f, 'burst', `bad${i}`)));
  t.ok(statuses.every((s) => s === ESME_RBINDFAIL), 'all refused alike');
  t.equal(await f.metric('ferry_smpp_customer_bind_failures_total', { reason: 'wrong_password' }), POLICY.threshold, 'only the threshold of them reach the password check');
  t.equal(await f.metric('ferry_smpp_customer_bind_failures_total', { reason: 'cooling_down' }), 10 - POLICY.threshold, 'the rest find the pair cooling down');
});

t.test(`the daemon guards binds with smpp.bindGuard from its config (${backendLabel})`, async (t) => {
  // A long first cool-down: the refusal below cannot be outrun by the real clock the daemon keeps.
  const d = await startDaemon({ FERRY_SMPP_BIND_GUARD_FAILURES: '2', FERRY_SMPP_BIND_GUARD_FIRST_COOLDOWN_SECONDS: '600' });
  t.teardown(() => d.stop());
  await d.daemon.accounts.create({ name: 'daemonacc', smppPassword: 'secret12' });
  const port = Number(d.daemon.addresses.smpp.split(':').pop());
  const status = async (password: string, localAddress?: string) => {
    const { client, resp } = await CustomerClient.bound(port, 'transceiver', 'daemonacc', password, { localAddress });
    await client.close();
    return resp.command_status;
  };
  t.same([await status('bad1'), await status('bad2')], [ESME_RBINDFAIL, ESME_RBINDFAIL]);
  t.equal(await status('secret12'), ESME_RBINDFAIL, 'cooling down after smpp.bindGuard.failures');
  t.equal(await status('secret12', OTHER), ESME_ROK, 'another address binds');
  const m = await call(d.admin, 'GET', '/metrics');
  t.match(m.text, /^ferry_smpp_bind_cooldowns_total 1$/m);
  t.match(m.text, /^ferry_smpp_customer_bind_failures_total\{reason="cooling_down"\} 1$/m, 'the right password was refused for the cool-down');
});

const ADDRESS_POLICY: CooldownPolicy = { threshold: 4, firstMs: 1000, maxMs: 4000, forgetMs: 60_000 };

async function budgeted(t: Teardown): Promise<CustomerFixture> {
  return customerFixture(t, { bindGuard: { cooldowns: env.backends.cooldowns, policy: POLICY, addressPolicy: ADDRESS_POLICY } });
}

t.test(`an unknown system_id and a wrong password get one answer (${backendLabel})`, async (t) => {
  const f = await budgeted(t);
  await f.account('known', { password: 'secret12' });
  const unknown = await outcome(t, f, 'nosuchid', 'secret12', '127.0.0.3');
  const wrong = await outcome(t, f, 'known', 'badpass1', '127.0.0.3');
  t.same([unknown, wrong], ['unknown_system_id', 'wrong_password'], 'the reasons differ in the log only');
});

t.test(`rotating system_ids from one address spends the address's budget (${backendLabel})`, async (t) => {
  const f = await budgeted(t);
  // A second server on the same store: the budget is shared by instances, not kept per process.
  const g = await budgeted(t);
  const real = await f.account('realacc', { password: 'secret12' });
  const from = '127.0.0.4';
  const reasons = [];
  // Each system_id fails once: far below its pair's threshold (3), so only the address's count can stop them.
  for (let i = 0; i < ADDRESS_POLICY.threshold; i++) reasons.push(await outcome(t, i % 2 ? g : f, `guess${i}`, 'secret12', from));
  t.same(reasons, ['unknown_system_id', 'unknown_system_id', 'unknown_system_id', 'unknown_system_id']);
  t.equal(await outcome(t, g, 'guess9', 'secret12', from), 'over_budget', 'the next system_id from that address is refused unchecked');
  t.equal(await outcome(t, f, 'realacc', real.password, from), 'over_budget', 'the right password of another system_id too (no oracle)');
  t.equal(await outcome(t, f, 'realacc', real.password, OTHER), 'ok', 'another address binds as usual');
  const started = [...f.logs, ...g.logs].filter((l) => l.level === 'warn' && l.cooldownMs !== undefined && l.systemId === undefined);
  t.equal(started.length, 1, 'one warning for the address');
  t.match(String(started[0].msg), /127\.0\.0\.4 across system_ids/);
  clock.advance(ADDRESS_POLICY.firstMs);
  t.equal(await outcome(t, f, 'realacc', real.password, from), 'ok', 'the address binds again after its cool-down');
});
