// Per-account message metrics keep a bounded set of series: the first accounts counted get a label of their own,
// every later one is counted under _other, so the totals stay whole while the series stay few.
import { Registry } from 'prom-client';
import t from 'tap';
import { AccountMessageMetrics, OTHER_ACCOUNTS } from '../../src/ledger/account-metrics.js';

async function samples(registry: Registry, name: string): Promise<Record<string, number>> {
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === name)!;
  const out: Record<string, number> = {};
  for (const v of (metric as unknown as { values: Array<{ labels: Record<string, string>; value: number }> }).values) {
    out[Object.values(v.labels).join('/')] = v.value;
  }
  return out;
}

t.test('the first accounts get their own series, later ones are counted as _other', async (t) => {
  const registry = new Registry();
  const m = new AccountMessageMetrics(registry, 2);
  m.acceptedOf('acc_a', 3);
  m.acceptedOf('acc_b');
  m.acceptedOf('acc_c', 2);
  m.acceptedOf('acc_d');
  m.acceptedOf('acc_a');
  m.finalOf('acc_a', 'delivered');
  m.finalOf('acc_a', 'delivered');
  m.finalOf('acc_c', 'failed');
  m.finalOf('acc_d', 'failed');
  m.finalOf('acc_b', 'expired');
  t.equal(m.labelled, 2, 'two accounts labelled');
  t.same(await samples(registry, 'ferry_account_messages_accepted_total'), { acc_a: 4, acc_b: 1, [OTHER_ACCOUNTS]: 3 }, 'accepted: the cap holds, the total is whole');
  t.same(
    await samples(registry, 'ferry_account_messages_final_total'),
    { 'acc_a/delivered': 2, [`${OTHER_ACCOUNTS}/failed`]: 2, 'acc_b/expired': 1 },
    'final statuses: per account and status, later accounts together',
  );
});

t.test('a cap of 0 labels no account', async (t) => {
  const registry = new Registry();
  const m = new AccountMessageMetrics(registry, 0);
  m.acceptedOf('acc_a');
  m.finalOf('acc_a', 'delivered');
  t.equal(m.labelled, 0);
  t.same(await samples(registry, 'ferry_account_messages_accepted_total'), { [OTHER_ACCOUNTS]: 1 });
  t.same(await samples(registry, 'ferry_account_messages_final_total'), { [`${OTHER_ACCOUNTS}/delivered`]: 1 });
});
