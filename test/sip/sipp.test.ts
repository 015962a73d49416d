import t from 'tap';
import type { IncomingCall } from '../../src/sip/index.js';
import { has, record, sdp, startUa, waitFor, type CallEvent } from './helpers.js';
import { HAVE_SIPP, freePort, runSipp, type SippOptions, type SippProcess } from './sipp.js';

const SKIP = HAVE_SIPP ? false : 'needs sipp (Debian sip-tester)';
const TIMERS = { t1: 100, t2: 1000, t4: 1000 };
const offer = sdp(40000, 'ferry');

function sipp(t: { teardown(fn: () => unknown): void }, o: SippOptions): SippProcess {
  const p = runSipp(o);
  t.teardown(() => p.kill());
  return p;
}

async function callSipp(t: Parameters<typeof sipp>[0], scenario: string, transport: 'udp' | 'tcp' = 'udp', credentials?: { username: string; password: string }) {
  const port = await freePort();
  const proc = sipp(t, { scenario, port, transport });
  await proc.ready;
  const ua = await startUa(t, { timers: TIMERS });
  const call = ua.invite({ target: { transport, host: '127.0.0.1', port }, from: 'sip:ferry@127.0.0.1', to: `sip:bob@127.0.0.1:${port}`, sdp: offer, credentials });
  const events = record(call);
  return { proc, call, events, ua };
}

const explain = (r: { code: number | null; output: string; errors: string }): string => `sipp exit ${r.code}\n${r.errors}\n${r.output.slice(-1500)}`;

for (const transport of ['udp', 'tcp'] as const) {
  t.test(`SIPp UAS (${transport}): answers, then hangs up itself`, { skip: SKIP }, async (t) => {
    const { proc, events } = await callSipp(t, 'uas-answer-then-bye.xml', transport);
    const result = await proc.done;
    await waitFor(() => has(events, 'ended'), 5000).catch(() => undefined);
    t.equal(result.code, 0, explain(result));
    t.same(events.map((e) => e[0]), ['provisional', 'answered', 'ended']);
    t.match(events[1][1], /m=audio 6000 RTP\/AVP 0/, 'SIPp SDP surfaced');
    t.same(events.at(-1), ['ended', { by: 'remote', reason: 'bye' }]);
  });
}

t.test('SIPp UAS: answers, Ferry hangs up', { skip: SKIP }, async (t) => {
  const { proc, call, events } = await callSipp(t, 'uas-answer-wait-bye.xml');
  await waitFor(() => has(events, 'answered') || has(events, 'failed'), 10_000);
  call.bye();
  const result = await proc.done;
  await waitFor(() => has(events, 'ended'), 5000).catch(() => undefined);
  t.equal(result.code, 0, explain(result));
  t.same(events.map((e) => e[0]), ['answered', 'ended']);
  t.same(events.at(-1), ['ended', { by: 'local', reason: 'bye' }]);
});

t.test('SIPp UAS: 401 digest challenge, Ferry retries with credentials, answered', { skip: SKIP }, async (t) => {
  const { proc, call, events } = await callSipp(t, 'uas-auth.xml', 'udp', { username: 'alice', password: 's3cret' });
  await waitFor(() => has(events, 'answered') || has(events, 'failed'), 10_000);
  call.bye();
  const result = await proc.done;
  t.equal(result.code, 0, explain(result));
  t.same(events.map((e) => e[0]).slice(0, 1), ['answered'], 'verifyauth accepted Ferry\'s Authorization');
});

t.test('SIPp UAS: a wrong password does not pass verifyauth', { skip: SKIP }, async (t) => {
  const { proc, events } = await callSipp(t, 'uas-auth.xml', 'udp', { username: 'alice', password: 'wrong' });
  const result = await proc.done;
  t.not(result.code, 0, 'the scenario takes its fail path');
  t.notOk(has(events, 'answered'));
});

t.test('SIPp UAS: 486 busy', { skip: SKIP }, async (t) => {
  const { proc, events } = await callSipp(t, 'uas-busy.xml');
  const result = await proc.done;
  await waitFor(() => has(events, 'failed'), 5000).catch(() => undefined);
  t.equal(result.code, 0, explain(result));
  t.same(events, [['failed', 486, 'Busy Here']]);
});

t.test('SIPp UAS: rings without answering, Ferry CANCELs, 487 ACKed', { skip: SKIP }, async (t) => {
  const { proc, call, events } = await callSipp(t, 'uas-ring-cancel.xml');
  await waitFor(() => has(events, 'provisional'), 10_000);
  call.cancel();
  const result = await proc.done;
  await waitFor(() => has(events, 'failed'), 5000).catch(() => undefined);
  t.equal(result.code, 0, explain(result));
  t.same(events, [['provisional', 180, 'Ringing', undefined], ['failed', 487, 'Request Terminated']]);
});

t.test('SIPp UAC against Ferry\'s UAS: OPTIONS, INVITE, answer, SIPp hangs up', { skip: SKIP }, async (t) => {
  const ua = await startUa(t, { timers: TIMERS });
  const calls: CallEvent[][] = [];
  let incoming: IncomingCall | undefined;
  ua.onInvite((call) => {
    incoming = call;
    calls.push(record(call));
    call.ring(180);
    call.answer(sdp(50000, 'ferry-uas'));
  });
  const result = await sipp(t, { scenario: 'uac-call.xml', port: await freePort(), remote: `127.0.0.1:${ua.port}` }).done;
  t.equal(result.code, 0, explain(result));
  t.equal(calls.length, 1);
  await waitFor(() => has(calls[0], 'ended'), 5000).catch(() => undefined);
  t.same(calls[0].map((e) => e[0]), ['ack', 'ended']);
  t.same(calls[0].at(-1), ['ended', { by: 'remote', reason: 'bye' }]);
  t.match(incoming!.sdp, /m=audio 6002/);
});

t.test('SIPp UAC with digest against Ferry\'s UAS requiring auth', { skip: SKIP }, async (t) => {
  const ua = await startUa(t, { timers: TIMERS, requireAuth: { realm: 'ferry.test', users: { alice: 's3cret' } } });
  const users: string[] = [];
  let events: CallEvent[] = [];
  ua.onInvite((call) => {
    users.push(call.username ?? '');
    events = record(call);
    call.answer(sdp(50000, 'ferry-uas'));
  });
  const result = await sipp(t, { scenario: 'uac-auth-call.xml', port: await freePort(), remote: `127.0.0.1:${ua.port}` }).done;
  t.equal(result.code, 0, explain(result));
  t.same(users, ['alice'], 'Ferry verified SIPp\'s digest once');
  await waitFor(() => has(events, 'ended'), 5000).catch(() => undefined);
  t.same(events.map((e) => e[0]), ['ack', 'ended'], 'the ACK and the BYE reached the dialog');
});
