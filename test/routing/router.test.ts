import t from 'tap';
import type { RouteRuleConfig } from '../../src/config/schema.js';
import { AccountFilter, PrefixFilter, PriorityFilter, SenderFilter } from '../../src/routing/filters.js';
import { Router, type RouteSwitchEvent } from '../../src/routing/router.js';
import { RoutingError } from '../../src/routing/routing-error.js';

const msg = (patch: Partial<{ destination: string; accountId: string; source: string; priority: number }> = {}) => ({
  destination: '447700900123',
  accountId: 'acme',
  source: 'Acme',
  priority: 0,
  ...patch,
});

const rule = (id: string, upstreams: string[], match: RouteRuleConfig['match'] = {}, weights?: number[]): RouteRuleConfig => ({
  id,
  match,
  upstreams,
  ...(weights ? { weights } : {}),
});

t.test('filters', async (t) => {
  const prefix = new PrefixFilter(['44', '4915', '+33']);
  t.ok(prefix.matches(msg({ destination: '447700900123' })));
  t.ok(prefix.matches(msg({ destination: '+447700900123' })), 'a leading + is ignored');
  t.ok(prefix.matches(msg({ destination: '4915112345678' })));
  t.notOk(prefix.matches(msg({ destination: '4916112345678' })), '49 alone is not a prefix');
  t.ok(prefix.matches(msg({ destination: '33612345678' })), 'a + in the config is ignored too');
  t.notOk(prefix.matches(msg({ destination: '4' })), 'shorter than every prefix');

  const account = new AccountFilter(['a', 'b']);
  t.ok(account.matches(msg({ accountId: 'b' })));
  t.notOk(account.matches(msg({ accountId: 'c' })));

  const sender = new SenderFilter(['Acme', 'BANK*']);
  t.ok(sender.matches(msg({ source: 'ACME' })), 'case-insensitive');
  t.ok(sender.matches(msg({ source: 'BankAlerts' })), 'trailing * is a prefix');
  t.notOk(sender.matches(msg({ source: 'Acme2' })));

  const priority = new PriorityFilter([2, 3]);
  t.ok(priority.matches(msg({ priority: 3 })));
  t.notOk(priority.matches(msg({ priority: 0 })));
});

t.test('rules match in order on prefix, account, sender and priority; all filters of a rule must match', async (t) => {
  const router = new Router([
    rule('otp-uk', ['fast'], { prefix: ['44'], priority: [2, 3] }),
    rule('acme-de', ['de1', 'de2'], { prefix: ['49'], account: ['acme'] }),
    rule('bank', ['bank'], { sender: ['Bank*'] }),
    rule('uk', ['uk1', 'uk2'], { prefix: ['44'] }),
    rule('default', ['any']),
  ]);
  t.same(router.candidates(msg({ priority: 3 })), { ruleId: 'otp-uk', upstreamIds: ['fast'] });
  t.same(router.candidates(msg({ priority: 0 })), { ruleId: 'uk', upstreamIds: ['uk1', 'uk2'] }, 'otp-uk needs the priority too');
  t.same(router.candidates(msg({ destination: '4915100' })), { ruleId: 'acme-de', upstreamIds: ['de1', 'de2'] });
  t.equal(router.candidates(msg({ destination: '4915100', accountId: 'other' }))!.ruleId, 'default', 'acme-de needs the account too');
  t.equal(router.candidates(msg({ destination: '4915100', accountId: 'other', source: 'BankOfX' }))!.ruleId, 'bank');
  t.equal(router.candidates(msg({ destination: '4415100', source: 'BankOfX' }))!.ruleId, 'bank', 'an earlier rule wins over a later one');
  t.equal(new Router([rule('uk', ['a'], { prefix: ['44'] })]).candidates(msg({ destination: '33' })), undefined, 'no rule matches');
  t.equal(router.candidates(msg()), router.candidates(msg()), 'the same choice object is returned (no allocation per message)');
});

t.test('weights draw the primary; the others follow in configured order', async (t) => {
  let roll = 0;
  const router = new Router([rule('w', ['a', 'b', 'c'], {}, [3, 1, 0])], { random: () => roll });
  roll = 0;
  t.same(router.candidates(msg())!.upstreamIds, ['a', 'b', 'c']);
  roll = 0.74; // 0.74 * 4 = 2.96 < 3
  t.same(router.candidates(msg())!.upstreamIds, ['a', 'b', 'c']);
  roll = 0.76; // 3.04: b
  t.same(router.candidates(msg())!.upstreamIds, ['b', 'a', 'c'], 'b primary, a then c as failover');

  const counts: Record<string, number> = { a: 0, b: 0, c: 0 };
  const seeded = new Router([rule('w', ['a', 'b', 'c'], {}, [3, 1, 0])]);
  for (let i = 0; i < 4000; i++) counts[seeded.candidates(msg())!.upstreamIds[0]]++;
  t.equal(counts.c, 0, 'weight 0 is never primary');
  t.ok(counts.a > 2600 && counts.a < 3400, `a is primary about 3/4 of the time (${counts.a})`);

  t.throws(() => new Router([rule('bad', ['a', 'b'], {}, [1])]), RoutingError, 'weights must align with upstreams');
  t.throws(() => new Router([rule('x', ['a']), rule('x', ['b'])]), RoutingError, 'duplicate rule ids');
  t.throws(() => new Router([rule('x', ['a', 'a'])]), RoutingError, 'an upstream twice');
});

t.test('switchRoute moves traffic for the next message, keeps failover, emits and counts; clearSwitch restores', async (t) => {
  const router = new Router([rule('uk', ['uk1', 'uk2'], { prefix: ['44'] }), rule('rest', ['x'])], {
    knowsUpstream: (id) => ['uk1', 'uk2', 'uk3', 'x'].includes(id),
    clock: () => 1000,
  });
  const events: RouteSwitchEvent[] = [];
  const off = router.onSwitch((e) => events.push(e));

  const result = router.switchRoute('uk', 'uk3', 'cli');
  t.same(result, { ruleId: 'uk', previousOverride: null, before: ['uk1', 'uk2'], after: ['uk3', 'uk1', 'uk2'] });
  t.same(router.candidates(msg())!.upstreamIds, ['uk3', 'uk1', 'uk2'], 'effective for the next message');
  t.same(events, [{ ruleId: 'uk', to: 'uk3', previousOverride: null, before: ['uk1', 'uk2'], after: ['uk3', 'uk1', 'uk2'], origin: 'cli', at: 1000 }]);

  const second = router.switchRoute('uk', 'uk2');
  t.equal(second.previousOverride, 'uk3');
  t.same(router.candidates(msg())!.upstreamIds, ['uk2', 'uk1'], 'switching to a configured failover puts it first');
  t.same(router.overrides(), { uk: 'uk2' });

  t.throws(() => router.switchRoute('nope', 'uk1'), { code: 'UNKNOWN_RULE' });
  t.throws(() => router.switchRoute('uk', 'ghost'), { code: 'UNKNOWN_UPSTREAM' });

  // A config reload keeps the operator's switch.
  router.setRules([rule('uk', ['uk1', 'uk2'], { prefix: ['44'] }), rule('new', ['x'])]);
  t.same(router.candidates(msg())!.upstreamIds, ['uk2', 'uk1'], 'override survives setRules');
  t.equal(router.rules()[0].switches, 2, 'switch count survives too');

  const cleared = router.clearSwitch('uk');
  t.equal(cleared.previousOverride, 'uk2');
  t.same(router.candidates(msg())!.upstreamIds, ['uk1', 'uk2']);
  t.equal(events.length, 3);
  t.equal(events[2].to, null);

  // Restoring stored switches (or ones broadcast by another instance) applies only changes.
  t.same(router.applyOverrides({ uk: 'uk3', gone: 'x' }, 'remote'), ['uk']);
  t.same(router.applyOverrides({ uk: 'uk3' }, 'remote'), [], 'unchanged: no event');
  t.equal(events.at(-1)!.origin, 'remote');
  off();
  router.clearSwitch('uk');
  t.equal(events.length, 4, 'unsubscribed');

  const view = router.rules()[0];
  t.same(view, { id: 'uk', match: ['prefix in [44]'], upstreams: ['uk1', 'uk2'], weights: null, numberValidation: null, override: null, effective: ['uk1', 'uk2'], switches: 5 });
});

t.test('a rule may carry a recipient check: its choices (weighted, switched) and its view name it', async (t) => {
  const router = new Router([
    { ...rule('strict-uk', ['a', 'b'], { prefix: ['44'] }, [1, 1]), numberValidation: 'strict' },
    { ...rule('off', ['c']), numberValidation: 'off' },
    rule('plain', ['d'], { prefix: ['33'] }),
  ]);
  t.equal(router.candidates(msg())!.numberValidation, 'strict');
  t.equal(router.candidates(msg({ destination: '4915100' }))!.numberValidation, 'off');
  router.switchRoute('strict-uk', 'b', 'test');
  t.same(router.candidates(msg()), { ruleId: 'strict-uk', upstreamIds: ['b', 'a'], numberValidation: 'strict' }, 'kept through a switch');
  t.same(new Router([rule('plain', ['d'])]).candidates(msg()), { ruleId: 'plain', upstreamIds: ['d'] }, 'absent when the rule sets none');
  t.same(router.rules().map((r) => r.numberValidation), ['strict', 'off', null]);
});

t.test('a switch overrides weights', async (t) => {
  const router = new Router([rule('w', ['a', 'b'], {}, [1, 1])], { random: () => 0.9 });
  t.same(router.candidates(msg())!.upstreamIds, ['b', 'a']);
  router.switchRoute('w', 'a');
  for (let i = 0; i < 10; i++) t.same(router.candidates(msg())!.upstreamIds, ['a', 'b']);
});
