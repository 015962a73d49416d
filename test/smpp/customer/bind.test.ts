import net from 'node:net';
import t from 'tap';
import { CommandStatus } from '../../../src/smpp/constants.js';
import { IpAllowList } from '../../../src/smpp/customer/ip-allow-list.js';
import { CustomerClient } from './customer-client.js';
import { customerFixture, waitFor } from './customer-fixture.js';

t.test('bind outcomes over real TCP, with the real AccountService', async (t) => {
  const f = await customerFixture(t);
  const acme = await f.account('acme', { password: 'secret12' });
  const port = f.server.ports.plain;

  for (const type of ['transmitter', 'receiver', 'transceiver'] as const) {
    const { client, resp } = await CustomerClient.bound(port, type, 'acme', 'secret12');
    t.equal(resp.command_status, CommandStatus.ESME_ROK, `${type} bind accepted`);
    t.equal(resp.command, `bind_${type}_resp`);
    t.equal(resp.system_id, 'Ferry', 'Ferry answers with its own system_id');
    await client.close();
  }

  const wrong = await CustomerClient.bound(port, 'transceiver', 'acme', 'nope1234');
  t.equal(wrong.resp.command_status, CommandStatus.ESME_RBINDFAIL, 'wrong password → ESME_RBINDFAIL');
  const retry = await wrong.client.bind('transceiver', 'acme', 'secret12');
  t.equal(retry.command_status, CommandStatus.ESME_ROK, 'the same connection may bind after a refusal');
  await wrong.client.close();

  const unknown = await CustomerClient.bound(port, 'transceiver', 'nobody', 'secret12');
  t.equal(unknown.resp.command_status, CommandStatus.ESME_RBINDFAIL, 'unknown system_id → ESME_RBINDFAIL, the same answer as a wrong password');
  await unknown.client.close();

  await f.accounts.setStatus(acme.accountId, 'suspended', 'unpaid');
  const suspended = await CustomerClient.bound(port, 'transceiver', 'acme', 'secret12');
  t.equal(suspended.resp.command_status, CommandStatus.ESME_RBINDFAIL, 'suspended account → ESME_RBINDFAIL');
  await suspended.client.close();

  t.equal(await f.metric('ferry_smpp_customer_bind_failures_total', { reason: 'wrong_password' }), 1);
  t.equal(await f.metric('ferry_smpp_customer_bind_failures_total', { reason: 'unknown_system_id' }), 1);
  t.equal(await f.metric('ferry_smpp_customer_bind_failures_total', { reason: 'suspended' }), 1);

  const refusals = f.logs.filter((l) => l.msg === 'customer bind refused');
  t.equal(refusals.length, 3, 'every refusal is logged');
  t.match(refusals[0], { systemId: 'acme', reason: 'wrong_password', remote: /127\.0\.0\.1/ });
  t.match(refusals[1], { systemId: 'nobody', reason: 'unknown_system_id' }, 'the real reason is logged server-side');
  t.notOk(f.logText().includes('secret12') || f.logText().includes('nope1234'), 'no password reaches the log');
});

t.test('allowed addresses: CIDR ranges and addresses, IPv4-mapped peers match IPv4 ranges', async (t) => {
  const f = await customerFixture(t);
  const outside = await f.account('outside', { allowedIps: ['10.0.0.0/8', '2001:db8::/32'] });
  const inside = await f.account('inside', { allowedIps: ['10.0.0.0/8', '127.0.0.0/8'] });
  const exact = await f.account('exact', { allowedIps: ['127.0.0.1'] });
  const port = f.server.ports.plain;

  const refused = await CustomerClient.bound(port, 'transceiver', outside.systemId, outside.password);
  t.equal(refused.resp.command_status, CommandStatus.ESME_RBINDFAIL, 'address outside the ranges → ESME_RBINDFAIL');
  await refused.client.close();
  t.equal(await f.metric('ferry_smpp_customer_bind_failures_total', { reason: 'ip_not_allowed' }), 1);
  // The address is checked before the password: from outside, a wrong password answers exactly as the right one,
  // so a guess there teaches nothing.
  const guess = await CustomerClient.bound(port, 'transceiver', outside.systemId, 'wrong-guess');
  t.equal(guess.resp.command_status, CommandStatus.ESME_RBINDFAIL, 'a wrong password from outside answers as the right one');
  await guess.client.close();
  t.equal(await f.metric('ferry_smpp_customer_bind_failures_total', { reason: 'wrong_password' }), 0, 'not even counted as a wrong password');
  t.ok(await f.bind(inside), 'address inside a range binds');
  t.ok(await f.bind(exact), 'an exact address binds');

  const list = new IpAllowList(['127.0.0.0/8', 'fd00::/8', 'not-an-ip', '10.0.0.0/99']);
  t.same(list.invalid, ['not-an-ip', '10.0.0.0/99'], 'malformed entries are reported and match nothing');
  t.ok(list.allows('::ffff:127.0.0.1'), 'IPv4-mapped IPv6 matches 127.0.0.0/8');
  t.ok(list.allows('fd00::1'));
  t.notOk(list.allows('192.168.1.1'));
  t.notOk(list.allows(undefined), 'no address, no bind');
  t.ok(new IpAllowList(null).allows('192.168.1.1'), 'no list allows everyone');
  t.ok(new IpAllowList([]).allows('192.168.1.1'), 'an empty list allows everyone');
  t.notOk(new IpAllowList(['garbage']).allows('127.0.0.1'), 'a list of only bad entries allows no one');

  await t.test('a dual-stack listener sees ::ffff:127.0.0.1 and still matches 127.0.0.0/8', async (t) => {
    const probe = net.createServer();
    const v6 = await new Promise<boolean>((resolve) => {
      probe.once('error', () => resolve(false));
      probe.listen(0, '::', () => probe.close(() => resolve(true)));
    });
    if (!v6) {
      t.comment('no IPv6 on this machine: skipped');
      return;
    }
    const dual = await customerFixture(t, { host: '::' });
    const acc = await dual.account('dual', { allowedIps: ['127.0.0.0/8'] });
    const client = await dual.bind(acc, 'transceiver', { host: '127.0.0.1' });
    t.ok(client, 'bound');
    const remote = dual.server.binds.sessions()[0].socket.remoteAddress;
    t.equal(remote, '::ffff:127.0.0.1', 'the peer really was IPv4-mapped');
  });
});

t.test('max binds per system_id: counted while binding and bound, released on close', async (t) => {
  const f = await customerFixture(t);
  const acc = await f.account('limited', { maxBinds: 2 });
  const port = f.server.ports.plain;
  // Three binds at once: the slot is taken when the check completes, so exactly one loses.
  const attempts = await Promise.all([1, 2, 3].map(() => CustomerClient.bound(port, 'transceiver', acc.systemId, acc.password)));
  t.teardown(() => Promise.all(attempts.map((a) => a.client.close())));
  const statuses = attempts.map((a) => a.resp.command_status).sort();
  t.same(statuses, [CommandStatus.ESME_ROK, CommandStatus.ESME_ROK, CommandStatus.ESME_RBINDFAIL], 'two bound, the third refused');
  t.equal(await f.metric('ferry_smpp_customer_bind_failures_total', { reason: 'max_binds' }), 1);
  t.equal(f.server.binds.count(acc.accountId), 2);

  const winner = attempts.find((a) => a.resp.command_status === CommandStatus.ESME_ROK)!;
  await winner.client.close();
  await waitFor(() => f.server.binds.slotsInUse(acc.systemId) === 1, 5000, 'slot released');
  const again = await CustomerClient.bound(port, 'transceiver', acc.systemId, acc.password);
  t.teardown(() => again.client.close());
  t.equal(again.resp.command_status, CommandStatus.ESME_ROK, 'a freed slot can be bound again');
});

t.test('commands before bind, receiver-only submit, unknown commands', async (t) => {
  const f = await customerFixture(t);
  const acc = await f.account('proto');
  const anon = await f.connect();
  const early = await anon.request('submit_sm', { source_addr: 'Ferry', destination_addr: '447700900001', short_message: Buffer.from('hi') });
  t.equal(early.command_status, CommandStatus.ESME_RINVBNDSTS, 'submit before bind → ESME_RINVBNDSTS');
  const earlyQuery = await anon.request('query_sm', { message_id: 'x' });
  t.equal(earlyQuery.command_status, CommandStatus.ESME_RINVBNDSTS);
  t.equal((await anon.request('enquire_link')).command_status, CommandStatus.ESME_ROK, 'enquire_link works before bind');

  const rx = await f.bind(acc, 'receiver');
  const refused = await rx.request('submit_sm', { source_addr: 'Ferry', destination_addr: '447700900001', short_message: Buffer.from('hi') });
  t.equal(refused.command_status, CommandStatus.ESME_RINVBNDSTS, 'a receiver bind may not submit');
  t.equal(f.sms.submissions.length, 0);

  const trx = await f.bind(acc, 'transceiver');
  // command_id 0x00000010 does not exist; written by hand since no client library would send it.
  const unknown = Buffer.alloc(16);
  unknown.writeUInt32BE(16, 0);
  unknown.writeUInt32BE(0x10, 4);
  unknown.writeUInt32BE(0, 8);
  unknown.writeUInt32BE(77, 12);
  trx.writeRaw(unknown);
  const nack = await trx.next((p) => p.command === 'generic_nack');
  t.equal(nack.command_status, CommandStatus.ESME_RINVCMDID);
  t.equal(nack.sequence_number, 77);
  const stillOk = await trx.request('submit_sm', { source_addr: 'Ferry', destination_addr: '447700900001', data_coding: 0, short_message: Buffer.from('hi') });
  t.equal(stillOk.command_status, CommandStatus.ESME_ROK, 'the session goes on after the nack');
});

t.test('garbage bytes close only that session', async (t) => {
  const f = await customerFixture(t);
  const acc = await f.account('garbage');
  const good = await f.bind(acc);
  const bad = await f.bind(acc);
  await waitFor(() => f.server.binds.count(acc.accountId) === 2);
  // An impossible command_length (3 octets): the stream cannot be framed any more.
  bad.writeRaw(Buffer.from([0x00, 0x00, 0x00, 0x03, 0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 0, 0, 0, 0, 0]));
  await bad.closed;
  t.pass('the garbled session was closed');
  await waitFor(() => f.server.binds.count(acc.accountId) === 1, 5000, 'registry updated');
  const resp = await good.request('submit_sm', { source_addr: 'Ferry', destination_addr: '447700900001', data_coding: 0, short_message: Buffer.from('still here') });
  t.equal(resp.command_status, CommandStatus.ESME_ROK, 'the other bound session keeps working');
  t.equal(f.sms.last().text, 'still here');
});

t.test('bind registry: receivers, round-robin pick, events, gauge, close unbinds', async (t) => {
  const f = await customerFixture(t);
  const a = await f.account('rr');
  const b = await f.account('other');
  const events: string[] = [];
  f.server.binds.on('receiverBound', (acc) => events.push(`bound:${acc}`));
  f.server.binds.on('unbound', (acc) => events.push(`unbound:${acc}`));

  await f.bind(a, 'transmitter');
  const rx1 = await f.bind(a, 'receiver');
  await f.bind(a, 'transceiver');
  await f.bind(b, 'transmitter');
  await waitFor(() => f.server.binds.count(a.accountId) === 3);

  t.equal(f.server.binds.receivers(a.accountId).length, 2, 'receiver and transceiver, not the transmitter');
  t.same(f.server.binds.accountsWithReceivers(), [a.accountId], 'a transmitter-only account has no receivers');
  t.equal(f.server.binds.pickReceiver(b.accountId), undefined);
  const picks = [1, 2, 3, 4].map(() => f.server.binds.pickReceiver(a.accountId));
  t.not(picks[0], picks[1], 'round-robin alternates');
  t.equal(picks[0], picks[2]);
  t.equal(picks[1], picks[3]);
  t.same(events, [`bound:${a.accountId}`, `bound:${a.accountId}`]);

  t.equal(await f.metric('ferry_smpp_customer_binds', { bind_type: 'transmitter' }), 2);
  t.equal(await f.metric('ferry_smpp_customer_binds', { bind_type: 'receiver' }), 1);
  t.equal(await f.metric('ferry_smpp_customer_binds', { bind_type: 'transceiver' }), 1);

  // The picked session really reaches the customer: send it a deliver_sm.
  const session = f.server.binds.pickReceiver(a.accountId)!;
  const resp = await session.request({ command: 'deliver_sm', source_addr: '447700900001', destination_addr: 'Ferry', short_message: Buffer.from('receipt') });
  t.equal(resp.command_status, CommandStatus.ESME_ROK, 'deliver_sm answered by the customer');

  await rx1.close();
  await waitFor(() => f.server.binds.receivers(a.accountId).length === 1, 5000, 'receiver gone');
  t.same(events.at(-1), `unbound:${a.accountId}`);

  await f.server.close();
  t.equal(f.server.binds.count(a.accountId), 0, 'close() ends every session');
  t.equal(f.server.sessionCount, 0);
});

t.test('idle connections that never bind are closed', async (t) => {
  const f = await customerFixture(t, { idleTimeoutMs: 150 });
  const socket = net.connect({ host: '127.0.0.1', port: f.server.ports.plain });
  socket.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await closed;
  t.pass('closed by the server');
});

t.test('connections per address are capped at accept; other addresses still connect', async (t) => {
  const f = await customerFixture(t, { maxSessionsPerAddress: 2 });
  const acc = await f.account('capped');
  await f.connect();
  await f.connect();
  await waitFor(() => f.server.connectionsFrom('127.0.0.1') === 2, 5000, 'two connections counted');
  const third = await f.connect();
  await third.closed;
  t.pass('the third connection from 127.0.0.1 was closed');
  t.equal(f.server.connectionsFrom('127.0.0.1'), 2, 'the refused one is not counted');
  t.equal(await f.metric('ferry_smpp_customer_connections_closed_total', { reason: 'address_cap' }), 1);
  const other = await CustomerClient.bound(f.server.ports.plain, 'transceiver', acc.systemId, acc.password, { localAddress: '127.0.0.2' });
  t.teardown(() => other.client.close());
  t.equal(other.resp.command_status, CommandStatus.ESME_ROK, '127.0.0.2 still connects and binds');
});

t.test('a connection that never binds is closed after the bind timeout', async (t) => {
  const f = await customerFixture(t, { bindTimeoutMs: 1000 });
  const acc = await f.account('timely');
  const bound = await f.bind(acc);
  const idle = await f.connect();
  // Bounded wait well past the 1 s timeout (the idle timeout is 30 s here, so it is not what closes it).
  await Promise.race([idle.closed, new Promise((_, reject) => setTimeout(() => reject(new Error('not closed within 10 s')), 10_000).unref())]);
  t.pass('the unbound connection was closed');
  t.equal(await f.metric('ferry_smpp_customer_connections_closed_total', { reason: 'bind_timeout' }), 1);
  const resp = await bound.request('enquire_link');
  t.equal(resp.command_status, CommandStatus.ESME_ROK, 'the bound session, older than the timeout, is still open');
});
