// Billing at accept time over real connections: prices by prefix, an atomic debit that never overdraws under
// concurrency, refunds of messages that fail, and voids of debits whose messages never reached the ledger.
import t from 'tap';
import { ledgerMessageId } from '../../src/messaging/smpp-ingress/smpp-message-id.js';
import { accountWithKey, call, gatewayOf } from '../helpers/daemon.js';
import { startGatewayDaemon, type GatewayDaemon } from '../helpers/gateway.js';

const DEST = '233241234567';
let gw: GatewayDaemon;

t.before(async () => {
  gw = await startGatewayDaemon({ receiptDelayMs: 20 });
  await gw.adminCall('PUT', '/admin/pricing', { defaultPrice: 0.01, entries: [{ prefix: '233', price: 0.02 }, { prefix: '2332', price: 0.025 }] });
});
t.teardown(() => gw.stop());

async function balance(accountId: string): Promise<number> {
  return (await gw.daemon.accounts.get(accountId)).balance;
}

t.test('the price table is served back and prices by longest prefix', async (t) => {
  const table = await gw.adminCall('GET', '/admin/pricing');
  t.equal(table.defaultPrice, 0.01);
  t.equal(gatewayOf(gw.daemon).prices.unitMicros('233241234567'), 25_000, '2332 beats 233');
  t.equal(gatewayOf(gw.daemon).prices.unitMicros('233541234567'), 20_000);
  t.equal(gatewayOf(gw.daemon).prices.unitMicros('14155552671'), 10_000, 'default');
  await t.rejects(gw.adminCall('PUT', '/admin/pricing', { entries: [{ prefix: 'abc', price: 1 }] }), { code: 'VALIDATION_ERROR' });
});

t.test('200 concurrent SMPP submits against credit for 40: exactly 40 accepted, balance exactly 0, never below', async (t) => {
  const acc = await gw.account('bill-race', 'secret1', { maxTps: 0 });
  await gw.daemon.accounts.credit(acc.id, 1.0); // 40 × 0.025
  const c = await gw.bind('transceiver', acc.systemId, acc.password);
  const resps = await Promise.all(
    Array.from({ length: 200 }, (_, i) => c.request('submit_sm', { source_addr: 'Ferry', destination_addr: DEST, dest_addr_ton: 1, short_message: `paid ${i}` }, 15_000)),
  );
  const ok = resps.filter((r) => r.command_status === 0);
  t.equal(ok.length, 40, 'exactly what the balance covers');
  t.equal(resps.filter((r) => r.command_status === 0x45).length, 160, 'the rest: ESME_RSUBMITFAIL (insufficient credit)');
  t.equal(await balance(acc.id), 0);
  const { rows } = await gw.daemon.db.query<{ n: number; total: number; min: number }>(
    `SELECT count(*)::int AS n, sum(amount_micros)::bigint AS total, min(balance_after_micros)::bigint AS min FROM account_transactions WHERE account_id = $1 AND kind = 'sms'`,
    [acc.id],
  );
  t.equal(rows[0].n, 40, 'one debit per accepted message');
  t.equal(Number(rows[0].total), -1_000_000);
  t.ok(Number(rows[0].min) >= 0, 'no balance after a debit was negative');
  const rec = await gatewayOf(gw.daemon).ledger.get(ledgerMessageId(String(ok[0].message_id))!);
  t.equal(rec?.costMicros, 25_000, 'the cost is on the message');
});

t.test('a long message costs its segments', async (t) => {
  const acc = await gw.account('bill-long', 'secret1', { maxTps: 0 });
  await gw.daemon.accounts.credit(acc.id, 1.0);
  const c = await gw.bind('transceiver', acc.systemId, acc.password);
  const r = await c.request('submit_sm', { source_addr: 'Ferry', destination_addr: '14155552671', dest_addr_ton: 1, message_payload: Buffer.from('x'.repeat(400)) });
  t.equal(r.command_status, 0);
  const rec = await gatewayOf(gw.daemon).ledger.get(ledgerMessageId(String(r.message_id))!);
  t.equal(rec?.segments, 3);
  t.equal(rec?.costMicros, 30_000);
  t.equal(await balance(acc.id), 0.97);
});

t.test('a message that ends failed is refunded once; debits without a message are voided', async (t) => {
  const acc = await gw.account('bill-refund', 'secret1', { maxTps: 0 });
  await gw.daemon.accounts.credit(acc.id, 0.1);
  const c = await gw.bind('transceiver', acc.systemId, acc.password);
  const r = await c.request('submit_sm', { source_addr: 'Ferry', destination_addr: DEST, dest_addr_ton: 1, short_message: 'later', schedule_delivery_time: '000001000000000R' });
  const id = ledgerMessageId(String(r.message_id))!;
  t.equal(await balance(acc.id), 0.075);
  await gatewayOf(gw.daemon).ledger.transition(id, 'failed', { reason: 'test' }, 'TEST');
  t.equal(await balance(acc.id), 0.1, 'refunded');
  await gatewayOf(gw.daemon).ledger.transition(id, 'rejected', { reason: 'late' }, 'TEST');
  t.equal(await balance(acc.id), 0.1, 'a late change refunds nothing more');

  t.ok(await gatewayOf(gw.daemon).billing.debit(acc.id, 50_000, 'msg_neverwritten'), 'a debit whose message never reached the ledger');
  t.equal(await balance(acc.id), 0.05);
  t.equal(await gatewayOf(gw.daemon).billing.voidOrphans(0), 1);
  t.equal(await balance(acc.id), 0.1, 'voided');
  t.equal(await gatewayOf(gw.daemon).billing.voidOrphans(0), 0, 'only once');
});

t.test('200 concurrent REST sends against credit for 30: 30 sent, 170 INSUFFICIENT_CREDIT, balance exactly 0', async (t) => {
  const { account, token } = await accountWithKey(gw, 'bill-rest');
  await gw.daemon.accounts.update(account.id, { maxTps: null });
  await gw.daemon.accounts.credit(account.id, 0.6); // 30 × 0.02
  const res = await Promise.all(
    Array.from({ length: 200 }, (_, i) => call(gw.api, 'POST', '/v1/sms/send', { token, body: { to: '+233541234567', from: 'Ferry', message: `rest ${i}` } })),
  );
  t.equal(res.filter((r) => r.status === 200).length, 30);
  const refused = res.filter((r) => r.status === 402);
  t.equal(refused.length, 170);
  t.equal(refused[0].json.code, 'INSUFFICIENT_CREDIT');
  t.equal(await balance(account.id), 0);
  const sent = res.find((r) => r.status === 200)!.json.data;
  t.equal(sent.cost, 0.02);
  t.same(sent.billing, { units: 1, currency: 'USD', unitCost: 0.02 });
});

t.test('concurrent debits are decided one after another: one that does not fit leaves the balance to smaller ones', async (t) => {
  const { account, token } = await accountWithKey(gw, 'bill-order');
  await gw.daemon.accounts.update(account.id, { maxTps: null });
  await gw.daemon.accounts.credit(account.id, 0.05); // 2 × 0.02 + 0.01 left; a 3-segment message costs 0.06
  const long = 'x'.repeat(400);
  const res = await Promise.all([
    call(gw.api, 'POST', '/v1/sms/send', { token, body: { to: '+233541234567', from: 'Ferry', message: long } }),
    call(gw.api, 'POST', '/v1/sms/send', { token, body: { to: '+233541234567', from: 'Ferry', message: 'short 1' } }),
    call(gw.api, 'POST', '/v1/sms/send', { token, body: { to: '+233541234567', from: 'Ferry', message: 'short 2' } }),
    call(gw.api, 'POST', '/v1/sms/send', { token, body: { to: '+233541234567', from: 'Ferry', message: 'short 3' } }),
  ]);
  t.equal(res[0].status, 402, 'the long one does not fit');
  t.same(
    res.slice(1).map((r) => r.status).sort(),
    [200, 200, 402],
    'two short ones do, whichever came first; the third finds 0.01 left',
  );
  t.equal(await balance(account.id), 0.01);
  const { rows } = await gw.daemon.db.query<{ n: number; total: number; last: number }>(
    `SELECT count(*)::int AS n, sum(amount_micros)::int8 AS total, min(balance_after_micros)::int8 AS last FROM account_transactions WHERE account_id = $1 AND kind = 'sms'`,
    [account.id],
  );
  t.same(rows[0], { n: 2, total: -40_000, last: 10_000 }, 'one transaction row per debit, each with the balance it left');
});

t.test('a postpaid account sends on credit down to its credit limit and never beyond, whatever the ingress', async (t) => {
  const { account, token } = await accountWithKey(gw, 'bill-postpaid');
  const send = (message: string) => call(gw.api, 'POST', '/v1/sms/send', { token, body: { to: '+233541234567', from: 'Ferry', message } });
  await gw.daemon.accounts.update(account.id, { maxTps: null });
  t.equal((await send('no credit, no limit')).status, 402, 'without a credit limit a zero balance sends nothing');

  await gw.daemon.accounts.update(account.id, { creditLimit: 0.1 }); // 5 × 0.02 on credit
  const res = await Promise.all(Array.from({ length: 100 }, (_, i) => send(`on credit ${i}`)));
  t.equal(res.filter((r) => r.status === 200).length, 5, 'exactly what the credit limit covers');
  t.equal(res.filter((r) => r.status === 402 && r.json.code === 'INSUFFICIENT_CREDIT').length, 95);
  t.equal(await balance(account.id), -0.1, 'at the limit, not below');

  // A bulk is debited as one: it fits while its total stays within the limit.
  await gw.daemon.accounts.credit(account.id, 0.1); // back to 0: 0.1 of credit again
  const bulk = (n: number) => call(gw.api, 'POST', '/v1/sms/bulk', { token, body: { to: Array.from({ length: n }, () => '+233541234567'), message: 'bulk', from: 'Ferry' } });
  t.equal((await bulk(6)).status, 402, '6 × 0.02 is beyond the limit: refused whole');
  t.equal((await bulk(5)).status, 200, '5 × 0.02 is within it');
  t.equal(await balance(account.id), -0.1);

  // SMPP submits are decided against the same floor.
  const smpp = await gw.account('bill-postpaid-smpp', 'secret1', { maxTps: 0 });
  await gw.daemon.accounts.update(smpp.id, { creditLimit: '0.05' }); // 2 × 0.025 (prefix 2332)
  const c = await gw.bind('transceiver', smpp.systemId, smpp.password);
  const resps = await Promise.all(
    Array.from({ length: 20 }, (_, i) => c.request('submit_sm', { source_addr: 'Ferry', destination_addr: DEST, dest_addr_ton: 1, short_message: `smpp ${i}` }, 15_000)),
  );
  t.equal(resps.filter((r) => r.command_status === 0).length, 2);
  t.equal(resps.filter((r) => r.command_status === 0x45).length, 18);
  t.equal(await balance(smpp.id), -0.05);

  const { rows } = await gw.daemon.db.query<{ min: number; actors: string[] }>(
    `SELECT min(balance_after_micros)::int8 AS min, array_agg(DISTINCT actor) AS actors FROM account_transactions WHERE account_id = ANY($1::text[]) AND kind = 'sms'`,
    [[account.id, smpp.id]],
  );
  t.ok(Number(rows[0].min) >= -100_000, 'no message debit went below its limit');
  t.same(rows[0].actors, ['system'], 'message debits are the daemon’s own movements');
});
