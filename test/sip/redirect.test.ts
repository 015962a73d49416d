// Redirects (RFC 3261 8.1.3.4 and 8.3.1): a UAS sends the caller elsewhere with a 302 and a Contact; a UAC told to
// follow redirects sends the same call (Call-ID, From tag, the next CSeq) to the Contact, once per allowance, and one
// that is not fails with the 302 as before. SIPp, an independent UAC, follows Ferry's 302 the same way.
import t from 'tap';
import { parseUri, type IncomingCall } from '../../src/sip/index.js';
import { cseqOf, fromOf } from '../../src/sip/message.js';
import { has, record, sdp, startUa, waitFor, type CallEvent } from './helpers.js';
import { HAVE_SIPP, freePort, runSipp } from './sipp.js';

const offer = sdp(40000, 'caller');
const answer = sdp(50000, 'callee');

for (const transport of ['udp', 'tcp'] as const) {
  t.test(`${transport}: a 302 followed once to its Contact, the same call answered there`, async (t) => {
    const first = await startUa(t);
    const second = await startUa(t);
    const uac = await startUa(t);
    const firstSeen: IncomingCall[] = [];
    const secondSeen: IncomingCall[] = [];
    const contact = `sip:bob@127.0.0.1:${second.port};hop=1${transport === 'tcp' ? ';transport=tcp' : ''}`;
    first.onInvite((call) => {
      firstSeen.push(call);
      call.redirect(contact);
    });
    second.onInvite((call) => {
      secondSeen.push(call);
      call.answer(answer);
    });
    const call = uac.invite({ target: { transport, host: '127.0.0.1', port: first.port }, from: 'sip:alice@127.0.0.1', to: 'sip:bob@127.0.0.1', sdp: offer, followRedirects: 1 });
    const events = record(call);
    const redirects: Array<[number, string]> = [];
    call.on('redirected', (code, uri) => redirects.push([code, uri]));
    await waitFor(() => has(events, 'answered') || has(events, 'failed'));
    t.same(events.map((e) => e[0]), ['answered'], 'answered, never failed');
    t.same(redirects, [[302, contact]], 'the redirect was reported with its Contact');
    t.equal(firstSeen.length, 1);
    t.equal(firstSeen[0].state, 'redirected');
    t.equal(secondSeen.length, 1, 'the second UA got the INVITE');
    const again = secondSeen[0];
    t.equal(again.request.uri, contact, 'sent to the Contact URI, its parameters kept');
    t.equal(parseUri(again.request.uri).params.hop, '1');
    t.equal(again.callId, firstSeen[0].callId, 'the same Call-ID');
    t.equal(fromOf(again.request).tag, fromOf(firstSeen[0].request).tag, 'the same From tag');
    t.equal(cseqOf(again.request).seq, cseqOf(firstSeen[0].request).seq + 1, 'the next CSeq');
    t.equal(again.sdp, offer, 'the same offer');
    call.bye();
    await waitFor(() => has(events, 'ended'));
    t.same(events.at(-1), ['ended', { by: 'local', reason: 'bye' }], 'hung up with the UA that answered');
  });
}

t.test('a UAC without followRedirects fails with the 302, as before', async (t) => {
  const first = await startUa(t);
  let contact: string | undefined;
  first.onInvite((call) => {
    contact = call.request.headers.get('contact');
    call.redirect(`sip:bob@127.0.0.1:9;hop=1`);
  });
  const uac = await startUa(t);
  const call = uac.invite({ target: { transport: 'udp', host: '127.0.0.1', port: first.port }, from: 'sip:alice@127.0.0.1', to: 'sip:bob@127.0.0.1', sdp: offer });
  const events = record(call);
  await waitFor(() => has(events, 'failed'));
  t.same(events, [['failed', 302, 'Moved Temporarily']]);
  t.ok(contact, 'the INVITE reached the redirecting UA');
});

t.test('a second redirect is not followed when one is allowed: no loop', async (t) => {
  const first = await startUa(t);
  const second = await startUa(t);
  let firstInvites = 0;
  let secondInvites = 0;
  first.onInvite((call) => {
    firstInvites++;
    call.redirect(`sip:bob@127.0.0.1:${second.port}`);
  });
  // The second sends it back: a loop a UAC must not follow for ever.
  second.onInvite((call) => {
    secondInvites++;
    call.redirect(`sip:bob@127.0.0.1:${first.port}`);
  });
  const uac = await startUa(t);
  const call = uac.invite({ target: { transport: 'udp', host: '127.0.0.1', port: first.port }, from: 'sip:alice@127.0.0.1', to: 'sip:bob@127.0.0.1', sdp: offer, followRedirects: 1 });
  const events: CallEvent[] = record(call);
  await waitFor(() => has(events, 'failed'));
  t.same(events, [['failed', 302, 'Moved Temporarily']], 'the second 302 ends the call');
  t.equal(firstInvites, 1);
  t.equal(secondInvites, 1);
});

t.test('a redirect without a usable Contact fails the call', async (t) => {
  const first = await startUa(t);
  first.onInvite((call) => call.redirect('sip:bob@127.0.0.1:5060;transport=ws'));
  const uac = await startUa(t);
  const call = uac.invite({ target: { transport: 'udp', host: '127.0.0.1', port: first.port }, from: 'sip:alice@127.0.0.1', to: 'sip:bob@127.0.0.1', sdp: offer, followRedirects: 1 });
  const events = record(call);
  await waitFor(() => has(events, 'failed'));
  t.same(events, [['failed', 302, 'Moved Temporarily']], 'a WebSocket Contact is not followed');
});

t.test('SIPp UAC follows Ferry\'s 302 to the Contact and is answered there', { skip: HAVE_SIPP ? false : 'needs sipp (Debian sip-tester)' }, async (t) => {
  const timers = { t1: 100, t2: 1000, t4: 1000 };
  const redirecting = await startUa(t, { timers });
  const answering = await startUa(t, { timers });
  const contact = `sip:+233200000203@127.0.0.1:${answering.port};ferry-hop=1`;
  const redirected: IncomingCall[] = [];
  const answered: IncomingCall[] = [];
  redirecting.onInvite((call) => {
    redirected.push(call);
    call.redirect(contact);
  });
  let ended: CallEvent[] = [];
  answering.onInvite((call) => {
    answered.push(call);
    ended = record(call);
    call.answer(answer);
  });
  const result = await runSipp({ scenario: 'uac-follow-302.xml', port: await freePort(), remote: `127.0.0.1:${redirecting.port}` }).done;
  t.equal(result.code, 0, result.code === 0 ? 'SIPp followed the 302' : `sipp exit ${result.code}\n${result.errors}\n${result.output.slice(-1500)}`);
  t.equal(redirected.length, 1, 'one INVITE to the redirecting UA');
  t.equal(answered.length, 1, 'one INVITE to the Contact');
  t.equal(answered[0]?.request.uri, contact, "SIPp's second INVITE went to the Contact URI, the hop marker kept");
  t.equal(answered[0]?.callId, redirected[0]?.callId, 'the same call');
  await waitFor(() => has(ended, 'ended'), 5000);
  t.same(ended.at(-1), ['ended', { by: 'remote', reason: 'bye' }], 'SIPp hung up the answered call');
});
