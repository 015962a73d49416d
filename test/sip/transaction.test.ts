import t from 'tap';
import {
  ClientInviteTransaction, ClientNonInviteTransaction, ServerInviteTransaction, ServerNonInviteTransaction, SipHeaders,
  buildResponse, cseqOf, parseMessage, topVia, type SipMessage, type SipRequest, type SipResponse,
} from '../../src/sip/index.js';
import { sleep, waitFor } from './helpers.js';

const TIMERS = { t1: 10, t2: 40, t4: 50 };

function req(method: string, branch = 'z9hG4bKtx1'): SipRequest {
  return parseMessage(`${method} sip:b@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:5;branch=${branch}\r\nFrom: <sip:a@127.0.0.1>;tag=f\r\nTo: <sip:b@127.0.0.1>\r\nCall-ID: tx\r\nCSeq: 7 ${method}\r\nContent-Length: 0\r\n\r\n`) as SipRequest;
}

function recorder(): { sent: SipMessage[]; send: (m: SipMessage) => Promise<void> } {
  const sent: SipMessage[] = [];
  return { sent, send: async (m) => void sent.push(m) };
}

function user() {
  const log: string[] = [];
  return { log, onResponse: (r: SipResponse) => log.push(`r${r.status}`), onTimeout: () => log.push('timeout'), onTransportError: () => log.push('terror') };
}

t.test('client non-INVITE on UDP: Timer E capped at T2, Timer F times out; on TCP one send', async (t) => {
  const udp = recorder();
  const u = user();
  let ended = 0;
  new ClientNonInviteTransaction(req('OPTIONS'), udp.send, false, TIMERS, u, () => ended++).start();
  await waitFor(() => u.log.includes('timeout'), 3000);
  // sends at 0, 10, 30, 70 then every 40 ms up to 640: at most 18; a late event loop only lowers it
  t.ok(udp.sent.length >= 5 && udp.sent.length <= 18, `sent ${udp.sent.length} times`);
  t.equal(ended, 1);
  const tcp = recorder();
  const u2 = user();
  new ClientNonInviteTransaction(req('OPTIONS'), tcp.send, true, TIMERS, u2, () => undefined).start();
  await waitFor(() => u2.log.includes('timeout'), 3000);
  t.equal(tcp.sent.length, 1, 'no retransmission on a reliable transport');
});

t.test('client non-INVITE: the final stops retransmission and is reported once', async (t) => {
  const r = recorder();
  const u = user();
  const request = req('BYE');
  const tx = new ClientNonInviteTransaction(request, r.send, false, TIMERS, u, () => undefined);
  tx.start();
  tx.receive(buildResponse(request, 200));
  tx.receive(buildResponse(request, 200));
  const count = r.sent.length;
  await sleep(100);
  t.equal(r.sent.length, count, 'no sends after the final');
  t.same(u.log, ['r200']);
  tx.terminate();
});

t.test('client INVITE: a non-2xx final is ACKed here (same branch, their To tag), re-ACKed on retransmission', async (t) => {
  const r = recorder();
  const u = user();
  const invite = req('INVITE');
  const tx = new ClientInviteTransaction(invite, r.send, false, TIMERS, u, () => undefined);
  tx.start();
  tx.receive(buildResponse(invite, 180, { toTag: 'tt' }));
  const busy = buildResponse(invite, 486, { toTag: 'tt' });
  tx.receive(busy);
  tx.receive(busy);
  const acks = r.sent.filter((m): m is SipRequest => m.kind === 'request' && m.method === 'ACK');
  t.equal(acks.length, 2);
  t.equal(topVia(acks[0]).branch, 'z9hG4bKtx1');
  t.equal(acks[0].headers.get('to'), '<sip:b@127.0.0.1>;tag=tt');
  t.same(cseqOf(acks[0]), { seq: 7, method: 'ACK' });
  t.same(u.log, ['r180', 'r486'], 'the retransmitted final is absorbed');
  tx.terminate();
});

t.test('client INVITE: Timer A doubles without cap until Timer B', async (t) => {
  const r = recorder();
  const u = user();
  new ClientInviteTransaction(req('INVITE'), r.send, false, TIMERS, u, () => undefined).start();
  await waitFor(() => u.log.includes('timeout'), 3000);
  t.ok(r.sent.length >= 4 && r.sent.length <= 7, `sent ${r.sent.length} times (at most 1 + 6 within 64*T1)`);
});

t.test('server non-INVITE: a retransmitted request gets the last response again', async (t) => {
  const r = recorder();
  const request = req('OPTIONS');
  const tx = new ServerNonInviteTransaction(request, r.send, false, TIMERS, () => undefined);
  tx.receiveRequest(request);
  t.equal(r.sent.length, 0, 'nothing to repeat yet');
  tx.respond(buildResponse(request, 200));
  tx.receiveRequest(request);
  tx.receiveRequest(request);
  t.equal(r.sent.length, 3);
  t.same(r.sent.map((m) => (m as SipResponse).status), [200, 200, 200]);
  tx.terminate();
});

t.test('server INVITE: a non-2xx final is retransmitted until the ACK, then absorbed', async (t) => {
  const r = recorder();
  const invite = req('INVITE');
  let ended = 0;
  const tx = new ServerInviteTransaction(invite, r.send, false, TIMERS, () => undefined, () => ended++);
  tx.respond(buildResponse(invite, 100));
  tx.receiveRequest(invite);
  t.same(r.sent.map((m) => (m as SipResponse).status), [100, 100], 'INVITE retransmission answered with the last provisional');
  tx.respond(buildResponse(invite, 486, { toTag: 'x' }));
  await waitFor(() => r.sent.length >= 5);
  const ack: SipRequest = { ...req('ACK'), headers: new SipHeaders(req('ACK').headers.entries()) };
  tx.receiveRequest(ack);
  const after = r.sent.length;
  await sleep(120);
  t.equal(r.sent.length, after, 'no retransmission after the ACK');
  await waitFor(() => ended === 1, 2000);
  t.equal(tx.state, 'terminated', 'Timer I ended it');
});

t.test('server INVITE: a 2xx is retransmitted until the core reports the ACK; without one onAckTimeout fires', async (t) => {
  const r = recorder();
  const invite = req('INVITE');
  const tx = new ServerInviteTransaction(invite, r.send, false, TIMERS, () => t.fail('no ACK timeout expected'), () => undefined);
  tx.respond(buildResponse(invite, 200, { toTag: 'x' }));
  await waitFor(() => r.sent.length >= 3);
  tx.ackReceived();
  const after = r.sent.length;
  await sleep(100);
  t.equal(r.sent.length, after);
  const r2 = recorder();
  let timedOut = 0;
  const tx2 = new ServerInviteTransaction(invite, r2.send, false, TIMERS, () => timedOut++, () => undefined);
  tx2.respond(buildResponse(invite, 200, { toTag: 'y' }));
  await waitFor(() => timedOut === 1, 3000);
  t.ok(r2.sent.length >= 4, `2xx sent ${r2.sent.length} times`);
});
