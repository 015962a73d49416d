// Blind transfer by REFER (RFC 3515): either side of a call asks the other to call a third party and hears how it
// goes through NOTIFYs of message/sipfrag; a REFER nobody handles is refused, so a transferor can fall back.
import t from 'tap';
import type { IncomingCall, IncomingRefer, ReferProgress } from '../../src/sip/index.js';
import { sdp, startUa, waitFor } from './helpers.js';

async function answeredPair(t: Parameters<typeof startUa>[0]) {
  const uas = await startUa(t);
  const uac = await startUa(t);
  let incoming: IncomingCall | undefined;
  uas.onInvite((call) => {
    incoming = call;
    call.answer(sdp(50000, 'callee'));
  });
  const call = uac.invite({ target: { transport: 'udp', host: '127.0.0.1', port: uas.port }, from: 'sip:ferry@127.0.0.1', to: 'sip:+233201234567@127.0.0.1', sdp: sdp(40000, 'caller') });
  let answered = false;
  call.on('answered', () => (answered = true));
  await waitFor(() => answered && incoming?.state === 'confirmed', 5000, 'the call answered');
  return { call, incoming: incoming! };
}

t.test('a REFER accepted: 202, then the transfer reported until the third party answers', async (t) => {
  const { call, incoming } = await answeredPair(t);
  const received: IncomingRefer[] = [];
  incoming.on('refer', (refer) => {
    received.push(refer);
    refer.accept();
    setTimeout(() => refer.notify(180), 20);
    setTimeout(() => refer.notify(200), 40);
  });
  const progress: ReferProgress[] = [];
  call.on('referProgress', (p) => progress.push(p));
  const answer = await call.refer('sip:+233207654321@127.0.0.1;user=phone');
  t.same(answer, { status: 202, reason: 'Accepted' }, 'the REFER was accepted');
  await waitFor(() => progress.some((p) => p.final), 5000, 'the final report');
  t.equal(received.length, 1);
  t.equal(received[0].referTo, 'sip:+233207654321@127.0.0.1;user=phone', 'the referred party read Refer-To');
  t.match(received[0].referredBy, /sip:ferry@127\.0\.0\.1/, 'and who referred it');
  t.same(progress, [
    { status: 100, reason: 'Trying', final: false },
    { status: 180, reason: 'Ringing', final: false },
    { status: 200, reason: 'OK', final: true },
  ], 'Trying, Ringing, then OK ends the subscription');
  t.equal(call.state, 'confirmed', 'the transferor still holds the call until it hangs up');
});

t.test('a REFER nobody handles is refused, so the transferor can do it another way', async (t) => {
  const { call, incoming } = await answeredPair(t);
  t.same(await call.refer('sip:+233207654321@127.0.0.1'), { status: 501, reason: 'Not Implemented' }, 'no listener: 501');
  incoming.on('refer', () => undefined);
  t.same(await call.refer('sip:+233207654321@127.0.0.1'), { status: 603, reason: 'Decline' }, 'a listener that left it unanswered: 603');
  incoming.removeAllListeners('refer');
  incoming.on('refer', (refer) => refer.reject(405));
  t.equal((await call.refer('sip:+233207654321@127.0.0.1')).status, 405, 'a refusal of its own');
});

t.test('the called side can refer too, and a failed transfer is reported as such', async (t) => {
  const { call, incoming } = await answeredPair(t);
  call.on('refer', (refer) => {
    refer.accept();
    setTimeout(() => refer.notify(486, 'Busy Here'), 20);
  });
  const progress: ReferProgress[] = [];
  incoming.on('referProgress', (p) => progress.push(p));
  t.equal((await incoming.refer('sip:+233200000486@127.0.0.1')).status, 202);
  await waitFor(() => progress.some((p) => p.final), 5000, 'the final report');
  t.same(progress.at(-1), { status: 486, reason: 'Busy Here', final: true });
});

t.test('no REFER outside an answered call', async (t) => {
  const uas = await startUa(t);
  const uac = await startUa(t);
  uas.onInvite((call) => call.ring(180));
  const call = uac.invite({ target: { transport: 'udp', host: '127.0.0.1', port: uas.port }, from: 'sip:ferry@127.0.0.1', to: 'sip:+233200000480@127.0.0.1', sdp: sdp(40000) });
  t.equal((await call.refer('sip:+233207654321@127.0.0.1')).status, 481, 'ringing: nothing to transfer');
  call.cancel();
});
