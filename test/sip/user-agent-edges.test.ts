import t from 'tap';
import { cseqOf, parseNameAddr, type SipMessage, type SipRequest, type SipResponse } from '../../src/sip/index.js';
import { FAST, has, rawPeer, record, sdp, sleep, startUa, waitFor, type CallEvent } from './helpers.js';

const responses = (msgs: SipMessage[]): SipResponse[] => msgs.filter((m): m is SipResponse => m.kind === 'response');
const requests = (msgs: SipMessage[], method: string): SipRequest[] => msgs.filter((m): m is SipRequest => m.kind === 'request' && m.method === method);

function request(method: string, peerPort: number, uaPort: number, o: { branch?: string; cseq?: string; toTag?: string; callId?: string; extra?: string[]; body?: string } = {}): string {
  const body = o.body ?? '';
  return [
    `${method} sip:bob@127.0.0.1:${uaPort} SIP/2.0`,
    `Via: SIP/2.0/UDP 127.0.0.1:${peerPort};branch=${o.branch ?? 'z9hG4bK' + Math.random().toString(16).slice(2)}`,
    'Max-Forwards: 70',
    `From: <sip:raw@127.0.0.1:${peerPort}>;tag=raw1`,
    `To: <sip:bob@127.0.0.1:${uaPort}>${o.toTag ? ';tag=' + o.toTag : ''}`,
    `Call-ID: ${o.callId ?? 'raw-' + Math.random().toString(16).slice(2)}`,
    `CSeq: ${o.cseq ?? '1 ' + method}`,
    `Contact: <sip:raw@127.0.0.1:${peerPort}>`,
    ...(o.extra ?? []),
    `Content-Length: ${Buffer.byteLength(body)}`,
    '',
    body,
  ].join('\r\n');
}

t.test('UAS answers: OPTIONS 200 (again for a retransmission), 405, 481, 400; garbage ignored', async (t) => {
  const ua = await startUa(t);
  const peer = await rawPeer(t);
  const opt = request('OPTIONS', peer.port, ua.port, { branch: 'z9hG4bKopt1' });
  peer.send(opt, ua.port);
  peer.send(opt, ua.port); // retransmission: same transaction, the same response again
  peer.send(request('REGISTER', peer.port, ua.port), ua.port);
  peer.send(request('BYE', peer.port, ua.port, { toTag: 'nosuch' }), ua.port);
  peer.send(request('CANCEL', peer.port, ua.port), ua.port);
  peer.send(request('INVITE', peer.port, ua.port, { cseq: '1 BYE' }), ua.port);
  peer.send('\x16\x03\x01 not sip at all\r\n\r\n', ua.port);
  peer.send('\r\n\r\n', ua.port);
  await waitFor(() => peer.received.length >= 6);
  await sleep(FAST.t1 * 3);
  const got = responses(peer.received).map((r) => `${cseqOf(r).method} ${r.status}`).sort();
  t.same(got, ['BYE 400', 'BYE 481', 'CANCEL 481', 'OPTIONS 200', 'OPTIONS 200', 'REGISTER 405'].sort(), 'one answer each; none for garbage');
  const r405 = responses(peer.received).find((r) => r.status === 405)!;
  t.match(r405.headers.get('allow'), /INVITE/);
  const bad = responses(peer.received).find((r) => r.status === 400)!;
  t.match(bad.reason, /CSeq method/);
});

t.test('a 2xx never ACKed is retransmitted, then the UAS hangs up (BYE to the Contact)', async (t) => {
  const ua = await startUa(t, { transports: ['udp'] });
  const peer = await rawPeer(t);
  let events: CallEvent[] = [];
  ua.onInvite((call) => {
    events = record(call);
    call.answer(sdp(50000));
  });
  peer.send(request('INVITE', peer.port, ua.port, { body: sdp(40000), extra: ['Content-Type: application/sdp'] }), ua.port);
  await waitFor(() => has(events, 'ended'), 5000);
  const oks = responses(peer.received).filter((r) => r.status === 200 && cseqOf(r).method === 'INVITE');
  t.ok(oks.length >= 3, `200 sent ${oks.length} times without an ACK`);
  t.same(events, [['ended', { by: 'local', reason: 'no ACK' }]]);
  const bye = requests(peer.received, 'BYE');
  t.equal(bye.length >= 1, true, 'BYE reached the caller\'s Contact');
  t.equal(parseNameAddr(bye[0].headers.get('to')!).tag, 'raw1', 'in the dialog');
});

t.test('UAC: Record-Route honoured, 2xx retransmissions re-ACKed, one answered event', async (t) => {
  const ua = await startUa(t, { transports: ['udp'] });
  const uas = await rawPeer(t); // plays the callee
  const proxy = await rawPeer(t); // the route the callee's 200 names
  const call = ua.invite({ target: { transport: 'udp', host: '127.0.0.1', port: uas.port }, from: 'sip:alice@127.0.0.1', to: 'sip:bob@127.0.0.1', sdp: sdp(40000) });
  const events = record(call);
  await waitFor(() => requests(uas.received, 'INVITE').length >= 1);
  const invite = requests(uas.received, 'INVITE')[0];
  const ok = [
    'SIP/2.0 200 OK',
    ...invite.headers.getAll('via').map((v) => `Via: ${v}`),
    // the proxy nearest the callee comes first; the one nearest us (our first hop) last
    `Record-Route: <sip:edge.invalid;lr>, <sip:127.0.0.1:${proxy.port};lr>`,
    `From: ${invite.headers.get('from')}`,
    `To: ${invite.headers.get('to')};tag=callee1`,
    `Call-ID: ${invite.headers.get('call-id')}`,
    `CSeq: ${invite.headers.get('cseq')}`,
    `Contact: <sip:bob@127.0.0.1:${uas.port}>`,
    'Content-Type: application/sdp',
    `Content-Length: ${sdp(50000).length}`,
    '',
    sdp(50000),
  ].join('\r\n');
  uas.send(ok, ua.port);
  uas.send(ok, ua.port); // a retransmission
  await waitFor(() => requests(proxy.received, 'ACK').length >= 2);
  t.same(events.map((e) => e[0]), ['answered'], 'answered once');
  const ack = requests(proxy.received, 'ACK')[0];
  t.equal(ack.uri, `sip:bob@127.0.0.1:${uas.port}`, 'ACK Request-URI is the remote target');
  t.same(ack.headers.getAll('route'), [`<sip:127.0.0.1:${proxy.port};lr>`, '<sip:edge.invalid;lr>'], 'route set = Record-Route reversed');
  t.not(ack.headers.get('via'), invite.headers.get('via'), 'the 2xx ACK has a new branch');
  call.bye();
  await waitFor(() => requests(proxy.received, 'BYE').length >= 1);
  const bye = requests(proxy.received, 'BYE')[0];
  t.equal(bye.uri, `sip:bob@127.0.0.1:${uas.port}`);
  t.equal(cseqOf(bye).seq, 2, 'BYE takes the next CSeq');
  t.equal(parseNameAddr(bye.headers.get('to')!).tag, 'callee1');
  t.equal(requests(uas.received, 'ACK').length + requests(uas.received, 'BYE').length, 0, 'nothing bypassed the route');
});

t.test('UAC: a 407 is answered with Proxy-Authorization and a new CSeq; a second 407 fails', async (t) => {
  const ua = await startUa(t, { transports: ['udp'] });
  const uas = await rawPeer(t);
  const call = ua.invite({ target: { transport: 'udp', host: '127.0.0.1', port: uas.port }, from: 'sip:alice@127.0.0.1', to: 'sip:bob@127.0.0.1', sdp: sdp(40000), credentials: { username: 'alice', password: 'pw' } });
  const events = record(call);
  const challenge = (inv: SipRequest): string => [
    'SIP/2.0 407 Proxy Authentication Required',
    ...inv.headers.getAll('via').map((v) => `Via: ${v}`),
    `From: ${inv.headers.get('from')}`,
    `To: ${inv.headers.get('to')};tag=px`,
    `Call-ID: ${inv.headers.get('call-id')}`,
    `CSeq: ${inv.headers.get('cseq')}`,
    'Proxy-Authenticate: Digest realm="proxy.test", nonce="n1", qop="auth"',
    'Content-Length: 0', '', '',
  ].join('\r\n');
  await waitFor(() => requests(uas.received, 'INVITE').length >= 1);
  uas.send(challenge(requests(uas.received, 'INVITE')[0]), ua.port);
  await waitFor(() => requests(uas.received, 'INVITE').some((r) => r.headers.has('proxy-authorization')));
  const second = requests(uas.received, 'INVITE').find((r) => r.headers.has('proxy-authorization'))!;
  t.equal(cseqOf(second).seq, 2);
  t.match(second.headers.get('proxy-authorization'), /username="alice", realm="proxy.test", nonce="n1"/);
  t.equal(requests(uas.received, 'ACK').length >= 1, true, 'the 407 was ACKed by the transaction');
  uas.send(challenge(second), ua.port);
  await waitFor(() => has(events, 'failed'));
  t.same(events, [['failed', 407, 'Proxy Authentication Required']]);
});

t.test('UAS: an ACK reusing the INVITE branch confirms the call; a late INVITE copy starts no second call', async (t) => {
  const ua = await startUa(t, { transports: ['udp'] });
  const peer = await rawPeer(t);
  const calls: CallEvent[][] = [];
  ua.onInvite((call) => {
    calls.push(record(call));
    call.answer(sdp(50000));
  });
  const invite = request('INVITE', peer.port, ua.port, { branch: 'z9hG4bKsame', callId: 'late-copy', body: sdp(40000), extra: ['Content-Type: application/sdp'] });
  peer.send(invite, ua.port);
  await waitFor(() => responses(peer.received).some((r) => r.status === 200));
  const ok = responses(peer.received).find((r) => r.status === 200)!;
  const toTag = parseNameAddr(ok.headers.get('to')!).tag!;
  peer.send(request('ACK', peer.port, ua.port, { branch: 'z9hG4bKsame', callId: 'late-copy', cseq: '1 ACK', toTag }), ua.port);
  await waitFor(() => has(calls[0], 'ack'));
  peer.send(invite, ua.port); // a delayed copy
  await sleep(FAST.t1 * 5);
  t.equal(calls.length, 1, 'one call');
  t.same(calls[0], [['ack']]);
});
