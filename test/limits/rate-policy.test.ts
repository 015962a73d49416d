import t from 'tap';
import { MESSENGER_RATE_LIMITS } from '../../src/limits/messenger-rate-limits.js';
import { RatePolicy, type RateTable } from '../../src/limits/rate-policy.js';
import { MemoryRateWindows } from '../../src/store/local/memory-rate-windows.js';
import { testClock } from '../helpers/backends.js';

const DAY = 86_400_000;

function setup(table: RateTable) {
  const clock = testClock(20_000 * DAY);
  const windows = new MemoryRateWindows({ clock: () => clock.now });
  return { clock, windows, policy: new RatePolicy(windows, table) };
}

t.test('keys per subject, all under the account hash tag', async (t) => {
  const { policy } = setup({
    'sms.send': [
      { per: 'account', second: 10 },
      { per: 'key', minute: 100 },
      { per: 'endpoint', day: 1000 },
      { per: 'recipient', day: 5 },
    ],
  });
  t.same(
    policy.entries('sms.send', { accountId: 'acc_1', keyId: 'key_9', recipient: '233200000001' }).map((e) => e.key),
    ['account:{acc_1}', 'key:{acc_1}:key_9', 'endpoint:{acc_1}:sms.send', 'recipient:{acc_1}:233200000001'],
  );
  t.same(
    policy.entries('sms.send', { accountId: 'acc_1' }).map((e) => e.key),
    ['account:{acc_1}', 'endpoint:{acc_1}:sms.send'],
    'rules of a subject the caller does not name are skipped',
  );
  t.throws(() => policy.entries('sms.bulk', { accountId: 'acc_1' }), /no rules for action "sms.bulk"/);
  t.throws(() => policy.entries('toString', { accountId: 'acc_1' }), /no rules/, 'only the table own actions');
  t.throws(() => policy.entries('sms.send', { accountId: 'acc_{1}' }), RangeError, 'braces would move the hash tag');
  t.throws(() => setup({ x: [{ per: 'account' }] }), /limits no window/);
  t.throws(() => setup({ x: [{ per: 'everyone' as 'account', day: 1 }] }), /unknown subject/);
});

t.test('every rule at once, all or nothing, the refusing subject named', async (t) => {
  const account = { per: 'account', second: 10, day: 100 } as const;
  const { policy, windows, clock } = setup({ 'sms.send': [account, { per: 'recipient', day: 20 }] });
  const to = (recipient: string) => ({ accountId: 'acc_1', recipient });
  t.same(await policy.take('sms.send', to('1'), 10), { allowed: true, remaining: { second: 0, day: 10 } }, 'cost counts against every rule');
  t.match(await policy.take('sms.send', to('1')), { allowed: false, per: 'account', window: 'second', limit: 10, key: 'account:{acc_1}' });
  clock.advance(1000);
  t.match(await policy.take('sms.send', to('1'), 11), { allowed: false, per: 'recipient', window: 'day', limit: 20, key: 'recipient:{acc_1}:1' });
  t.same(await policy.take('sms.send', to('2'), 10), { allowed: true, remaining: { second: 0, day: 10 } });
  clock.advance(1000);
  t.same(await windows.take('account:{acc_1}', account), { allowed: true, remaining: { second: 9, day: 79 } }, 'the refusals took nothing from the account');
});

t.test('the messenger table (spec §8)', async (t) => {
  const { policy, clock } = setup(MESSENGER_RATE_LIMITS);
  const caller = { accountId: 'acc_m', keyId: 'key_m', recipient: '233200000001' };
  let sent = 0;
  while ((await policy.take('messenger.send', caller)).allowed) sent++;
  t.equal(sent, 80, 'POST /send: 80 per second');
  t.match(await policy.take('messenger.send', caller), { allowed: false, per: 'endpoint', window: 'second', limit: 80, retryAfterMs: 1000 });
  t.equal((await policy.take('messenger.status', caller)).allowed, true, 'GET /status counts apart');
  t.equal((await policy.take('messenger.send', { ...caller, accountId: 'acc_other' })).allowed, true, 'another account counts apart');
  for (let s = 1; s < 60 && sent < 3000; s++) {
    clock.advance(1000);
    for (let i = 0; i < 80 && sent < 3000; i++) if ((await policy.take('messenger.send', caller)).allowed) sent++;
  }
  t.equal(sent, 3000);
  t.match(await policy.take('messenger.send', caller), { allowed: false, window: 'minute', limit: 3000 }, '3,000 per minute');

  let created = 0;
  while ((await policy.take('messenger.templates.create', caller)).allowed) created++;
  t.equal(created, 100, 'POST /templates: 100 creates per day');
  t.match(await policy.take('messenger.templates.create', caller), { allowed: false, window: 'day' });
  clock.now = Math.ceil(clock.now / DAY) * DAY;
  t.equal((await policy.take('messenger.templates.create', caller)).allowed, true, 'the next UTC day');
});
