// Credits, debits and credit limits over the real admin API of a running daemon: every amount that is not a valid
// amount of the account currency is refused with INVALID_AMOUNT and changes nothing; a debit stops at the credit
// limit (at zero without one), also when many arrive at once; every movement keeps its transaction row and actor.
import t from 'tap';
import { call, startDaemon, type TestDaemon } from '../helpers/daemon.js';
import { backendLabel } from '../helpers/env.js';

let d: TestDaemon;
let headers: Record<string, string>;

t.before(async () => {
  d = await startDaemon();
  headers = { authorization: `Bearer ${d.adminToken}`, 'x-ferry-actor': 'test:suite' };
});
t.teardown(() => d.stop());

const api = (method: string, path: string, body?: unknown) => call(d.admin, method, path, { body, headers });
const raw = (path: string, text: string) => call(d.admin, 'POST', path, { raw: text, headers: { ...headers, 'content-type': 'application/json' } });

async function transactions(accountId: string) {
  const { rows } = await d.daemon.db.query<{ amount_micros: number; balance_after_micros: number; kind: string; reference: string | null; actor: string | null }>(
    `SELECT amount_micros, balance_after_micros, kind, reference, actor FROM account_transactions WHERE account_id = $1 ORDER BY id`,
    [accountId],
  );
  return rows.map((r) => ({ ...r, amount_micros: Number(r.amount_micros), balance_after_micros: Number(r.balance_after_micros) }));
}

async function account(name: string, currency = 'USD'): Promise<{ id: string; name: string }> {
  const r = await api('POST', '/admin/accounts', { name, currency });
  if (r.status !== 201) throw new Error(`account ${name}: ${r.text}`);
  return r.json.data;
}

t.test(`amounts that are not valid are refused with INVALID_AMOUNT and change nothing (${backendLabel})`, async (t) => {
  const acc = await account('bounds');
  const cases: Array<[unknown, string]> = [
    [1e308, 'range'],
    ['1e308', 'range'],
    ['Infinity', 'syntax'],
    ['-Infinity', 'syntax'],
    ['NaN', 'syntax'],
    [0, 'zero'],
    ['0.00', 'zero'],
    [0.0000001, 'decimals'],
    ['0.0000001', 'decimals'],
    [12.345, 'decimals'],
    ['12.345', 'decimals'],
    [-5, 'negative'],
    ['-9900', 'negative'],
  ];
  for (const kind of ['credit', 'debit']) {
    for (const [amount, rule] of cases) {
      const r = await api('POST', `/admin/accounts/bounds/${kind}`, { amount });
      t.equal(r.status, 400, `${kind} ${JSON.stringify(amount)}: 400`);
      t.equal(r.json.code, 'INVALID_AMOUNT', `${kind} ${JSON.stringify(amount)}: INVALID_AMOUNT`);
      t.same(r.json.data, { field: 'amount', rule }, `${kind} ${JSON.stringify(amount)}: ${rule}`);
    }
  }
  const negative = await api('POST', '/admin/accounts/bounds/credit', { amount: -9900 });
  t.match(negative.json.message, /must be positive; to take credit away, debit it \(POST \/admin\/accounts\/\{ref\}\/debit/, 'a negative credit points to debit');
  const decimals = await api('POST', '/admin/accounts/bounds/credit', { amount: '0.0000001' });
  t.equal(decimals.json.message, 'amount must have at most 2 decimal places in USD');
  const huge = await api('POST', '/admin/accounts/bounds/credit', { amount: 1e308 });
  t.equal(huge.json.message, 'amount must be at most 9007199254.740991');

  // JSON has no Infinity or NaN: such a body is not JSON at all.
  for (const text of ['{"amount": Infinity}', '{"amount": NaN}', '{"amount": -Infinity}']) {
    const r = await raw('/admin/accounts/bounds/credit', text);
    t.equal(r.status, 400);
    t.equal(r.json.code, 'INVALID_JSON', text);
  }
  for (const amount of [true, null, [1], { value: 1 }]) {
    const r = await api('POST', '/admin/accounts/bounds/credit', { amount });
    t.equal(r.status, 400);
    t.equal(r.json.code, 'VALIDATION_ERROR', `amount ${JSON.stringify(amount)}: not a number or a string`);
  }
  const missing = await api('POST', '/admin/accounts/bounds/credit', {});
  t.equal(missing.json.code, 'VALIDATION_ERROR');

  const yen = await account('yen', 'JPY');
  const r = await api('POST', '/admin/accounts/yen/credit', { amount: 1.5 });
  t.match(r.json, { code: 'INVALID_AMOUNT', message: 'amount must be a whole number in JPY' });
  t.equal((await api('POST', '/admin/accounts/yen/credit', { amount: 1500 })).status, 200, 'whole yen are fine');
  t.equal((await d.daemon.accounts.get(yen.id)).balance, 1500);

  t.equal((await d.daemon.accounts.get(acc.id)).balance, 0, 'the balance never moved');
  t.same(await transactions(acc.id), [], 'and no transaction was written');
  const unknown = await api('POST', '/admin/accounts/nobody/credit', { amount: 5 });
  t.equal(unknown.status, 404);
  t.equal(unknown.json.code, 'ACCOUNT_NOT_FOUND');
});

t.test('credit and debit move the balance and record the transaction with its actor', async (t) => {
  const acc = await account('moves');
  const credit = await api('POST', '/admin/accounts/moves/credit', { amount: '25.50', reference: 'INV-1' });
  t.equal(credit.status, 200);
  t.equal(credit.json.code, 'ACCOUNT_CREDITED');
  t.match(credit.json.data, {
    name: 'moves',
    balance: 25.5,
    creditLimit: 0,
    transaction: { kind: 'credit', amount: 25.5, balanceAfter: 25.5, reference: 'INV-1', actor: 'admin/test:suite@127.0.0.1' },
  });
  const debit = await api('POST', '/admin/accounts/moves/debit', { amount: 10, reference: 'refund of a duplicate top-up' });
  t.equal(debit.status, 200);
  t.equal(debit.json.code, 'ACCOUNT_DEBITED');
  t.match(debit.json.data, { balance: 15.5, transaction: { kind: 'debit', amount: -10, balanceAfter: 15.5 } });

  const over = await api('POST', '/admin/accounts/moves/debit', { amount: 20 });
  t.equal(over.status, 409);
  t.equal(over.json.code, 'CREDIT_LIMIT_EXCEEDED');
  t.same(over.json.data, { amount: 20, balance: 15.5, creditLimit: 0, available: 15.5, currency: 'USD' });
  t.match(over.json.message, /below zero \(it has no credit limit\); at most 15\.5 can be debited now/);
  const exact = await api('POST', `/admin/accounts/${acc.id}/debit`, { amount: 15.5 });
  t.equal(exact.json.data.balance, 0, 'down to zero exactly, by id this time');
  const cent = await api('POST', '/admin/accounts/moves/debit', { amount: 0.01 });
  t.equal(cent.json.code, 'CREDIT_LIMIT_EXCEEDED', 'not one cent below zero without a credit limit');

  const noActor = await call(d.admin, 'POST', '/admin/accounts/moves/credit', { body: { amount: 1 }, headers: { authorization: `Bearer ${d.adminToken}` } });
  t.equal(noActor.json.data.transaction.actor, 'admin@127.0.0.1', 'without the header: the token holder and the address');
  const hostile = await call(d.admin, 'POST', '/admin/accounts/moves/credit', {
    body: { amount: 1 },
    headers: { authorization: `Bearer ${d.adminToken}`, 'x-ferry-actor': `cli:eve\t"; DROP TABLE accounts; -- ${'x'.repeat(300)}` },
  });
  const actor = hostile.json.data.transaction.actor as string;
  t.match(actor, /^admin\/cli:eve_DROP_TABLE_accounts_--_x+@127\.0\.0\.1$/, 'sanitised');
  t.ok(actor.length <= 'admin/'.length + 64 + '@127.0.0.1'.length, 'and bounded');

  t.same(
    (await transactions(acc.id)).map((r) => [r.kind, r.amount_micros, r.balance_after_micros, r.actor]),
    [
      ['credit', 25_500_000, 25_500_000, 'admin/test:suite@127.0.0.1'],
      ['debit', -10_000_000, 15_500_000, 'admin/test:suite@127.0.0.1'],
      ['debit', -15_500_000, 0, 'admin/test:suite@127.0.0.1'],
      ['credit', 1_000_000, 1_000_000, 'admin@127.0.0.1'],
      ['credit', 1_000_000, 2_000_000, actor],
    ],
    'one row per movement that happened, none for the refused ones',
  );
});

t.test('a credit limit lets debits go down to -creditLimit and no further', async (t) => {
  const acc = await account('postpaid');
  for (const [creditLimit, rule] of [
    [-1, 'negative'],
    ['0.001', 'decimals'],
    [1e308, 'range'],
    ['Infinity', 'syntax'],
  ] as const) {
    const r = await api('PATCH', '/admin/accounts/postpaid', { creditLimit });
    t.equal(r.status, 400);
    t.match(r.json, { code: 'INVALID_AMOUNT', data: { field: 'creditLimit', rule } }, `creditLimit ${creditLimit}: ${rule}`);
  }
  const set = await api('PATCH', '/admin/accounts/postpaid', { creditLimit: 50 });
  t.equal(set.status, 200);
  t.equal(set.json.data.creditLimit, 50);
  t.equal((await api('GET', '/admin/accounts/postpaid')).json.data.creditLimit, 50, 'shown with the account');

  t.equal((await api('POST', '/admin/accounts/postpaid/credit', { amount: 10 })).json.data.balance, 10);
  const within = await api('POST', '/admin/accounts/postpaid/debit', { amount: 59.99 });
  t.equal(within.status, 200, 'within the limit');
  t.equal(within.json.data.balance, -49.99);
  const beyond = await api('POST', '/admin/accounts/postpaid/debit', { amount: 0.02 });
  t.equal(beyond.status, 409, 'beyond the limit');
  t.same(beyond.json.data, { amount: 0.02, balance: -49.99, creditLimit: 50, available: 0.01, currency: 'USD' });
  t.match(beyond.json.message, /below its credit limit of 50 \(-50\); at most 0\.01 can be debited now/);
  t.equal((await api('POST', '/admin/accounts/postpaid/debit', { amount: 0.01 })).json.data.balance, -50, 'exactly at the limit');

  // Lowering the limit below the current overdraft is allowed: nothing more can be debited until credit comes in.
  t.equal((await api('PATCH', '/admin/accounts/postpaid', { creditLimit: '0' })).json.data.creditLimit, 0);
  const none = await api('POST', '/admin/accounts/postpaid/debit', { amount: 0.01 });
  t.equal(none.json.code, 'CREDIT_LIMIT_EXCEEDED');
  t.equal(none.json.data.available, 0);
  t.equal((await api('POST', '/admin/accounts/postpaid/credit', { amount: 60 })).json.data.balance, 10, 'credits still work');
  t.equal((await d.daemon.accounts.get(acc.id)).balance, 10);
});

t.test('concurrent debits never pass the credit limit', async (t) => {
  const acc = await account('race');
  await api('PATCH', '/admin/accounts/race', { creditLimit: 30 });
  await api('POST', '/admin/accounts/race/credit', { amount: 20 });
  const results = await Promise.all(Array.from({ length: 120 }, () => api('POST', '/admin/accounts/race/debit', { amount: '0.5' })));
  t.equal(results.filter((r) => r.status === 200).length, 100, 'exactly what balance and limit cover: (20 + 30) / 0.5');
  t.equal(results.filter((r) => r.status === 409 && r.json.code === 'CREDIT_LIMIT_EXCEEDED').length, 20, 'the rest refused');
  t.equal((await d.daemon.accounts.get(acc.id)).balance, -30);
  const debits = (await transactions(acc.id)).filter((r) => r.kind === 'debit');
  t.equal(debits.length, 100);
  t.equal(
    debits.reduce((s, r) => s + r.amount_micros, 0),
    -50_000_000,
  );
  t.ok(
    debits.every((r) => r.balance_after_micros >= -30_000_000),
    'no debit left the balance below the limit',
  );
  t.same(
    debits.map((r) => r.balance_after_micros),
    Array.from({ length: 100 }, (_, i) => 20_000_000 - (i + 1) * 500_000),
    'each took the balance the one before it left',
  );
});

t.test('a credit that would take the balance beyond the money range is refused', async (t) => {
  const acc = await account('whale');
  t.equal((await api('POST', '/admin/accounts/whale/credit', { amount: '9007199254.74' })).status, 200);
  const r = await api('POST', '/admin/accounts/whale/credit', { amount: 1 });
  t.equal(r.status, 400);
  t.match(r.json, { code: 'INVALID_AMOUNT', data: { field: 'amount', rule: 'range' } });
  t.match(r.json.message, /beyond 9007199254\.740991, the largest Ferry keeps/);
  t.equal((await d.daemon.accounts.get(acc.id)).balance, 9007199254.74);
});
