import t from 'tap';
import type { IncomingCall, TransportKind } from '../../src/sip/index.js';
import { FAST, has, lossyRelay, record, sdp, silentPort, sleep, startUa, waitFor, type CallEvent } from './helpers.js';

const offer = sdp(40000, 'caller');
const answer = sdp(50000, 'callee');

for (const transport of ['udp', 'tcp'] as TransportKind[]) {
  t.test(`${transport}: call answered, then BYE from the caller`, async (t) => {
    const uas = await startUa(t);
    const uac = await startUa(t);
    let incoming: IncomingCall | undefined;
    let inEvents: CallEvent[] = [];
    uas.onInvite((call) => {
      incoming = call;
      inEvents = record(call);
      call.answer(answer);
    });
    const call = uac.invite({ target: { transport, host: '127.0.0.1', port: uas.port }, from: 'sip:alice@127.0.0.1', to: 'sip:bob@127.0.0.1', sdp: offer });
    const events = record(call);
    await waitFor(() => has(events, 'answered') && has(inEvents, 'ack'));
    t.same(events, [['answered', answer]], 'answered with the callee SDP, nothing before it');
    t.equal(incoming!.sdp, offer, 'the UAS saw the offer');
    t.equal(incoming!.callId, call.callId);
    t.equal(call.remoteTag, incoming!.localTag, 'dialog tags agree');
    t.equal(incoming!.remoteTag, call.localTag);
    call.bye();
    await waitFor(() => has(events, 'ended') && has(inEvents, 'ended'));
    t.same(events.at(-1), ['ended', { by: 'local', reason: 'bye' }]);
    t.same(inEvents.at(-1), ['ended', { by: 'remote', reason: 'bye' }]);
  });

  t.test(`${transport}: ring then answer, BYE from the callee`, async (t) => {
    const uas = await startUa(t);
    const uac = await startUa(t);
    let inEvents: CallEvent[] = [];
    let incoming: IncomingCall | undefined;
    uas.onInvite((call) => {
      incoming = call;
      inEvents = record(call);
      call.ring(180);
      call.ring(183, answer);
      setTimeout(() => call.answer(answer), 30);
    });
    const call = uac.invite({ target: { transport, host: '127.0.0.1', port: uas.port }, from: 'sip:alice@127.0.0.1', to: 'sip:bob@127.0.0.1', sdp: offer });
    const events = record(call);
    await waitFor(() => has(events, 'answered') && has(inEvents, 'ack'));
    t.same(events, [['provisional', 180, 'Ringing', undefined], ['provisional', 183, 'Session Progress', answer], ['answered', answer]]);
    incoming!.bye();
    await waitFor(() => has(events, 'ended') && has(inEvents, 'ended'));
    t.same(events.at(-1), ['ended', { by: 'remote', reason: 'bye' }]);
    t.same(inEvents.at(-1), ['ended', { by: 'local', reason: 'bye' }]);
  });

  for (const [code, reason] of [[486, 'Busy Here'], [480, 'Temporarily Unavailable']] as const) {
    t.test(`${transport}: ${code} ends in failed(${code})`, async (t) => {
      const uas = await startUa(t);
      const uac = await startUa(t);
      uas.onInvite((call) => call.reject(code));
      const call = uac.invite({ target: { transport, host: '127.0.0.1', port: uas.port }, from: 'sip:alice@127.0.0.1', to: 'sip:bob@127.0.0.1', sdp: offer });
      const events = record(call);
      await waitFor(() => has(events, 'failed'));
      await sleep(FAST.t1 * 4); // room for any wrong late event
      t.same(events, [['failed', code, reason]]);
    });
  }

  t.test(`${transport}: 401 challenge, retried once with credentials, answered`, async (t) => {
    const uas = await startUa(t, { requireAuth: { realm: 'ferry.test', users: { alice: 'secret' } } });
    const uac = await startUa(t);
    const seen: string[] = [];
    uas.onInvite((call) => {
      seen.push(call.username ?? '');
      call.answer(answer);
    });
    const call = uac.invite({ target: { transport, host: '127.0.0.1', port: uas.port }, from: 'sip:alice@127.0.0.1', to: 'sip:bob@127.0.0.1', sdp: offer, credentials: { username: 'alice', password: 'secret' } });
    const events = record(call);
    await waitFor(() => has(events, 'answered'));
    t.same(seen, ['alice'], 'one authenticated call reached the handler');
    t.same(events, [['answered', answer]]);
  });

  t.test(`${transport}: wrong password: the second challenge fails with 401`, async (t) => {
    const uas = await startUa(t, { requireAuth: { realm: 'ferry.test', users: { alice: 'secret' } } });
    const uac = await startUa(t);
    let reached = 0;
    uas.onInvite(() => reached++);
    const call = uac.invite({ target: { transport, host: '127.0.0.1', port: uas.port }, from: 'sip:alice@127.0.0.1', to: 'sip:bob@127.0.0.1', sdp: offer, credentials: { username: 'alice', password: 'wrong' } });
    const events = record(call);
    await waitFor(() => has(events, 'failed'));
    t.same(events, [['failed', 401, 'Unauthorized']]);
    t.equal(reached, 0);
  });

  t.test(`${transport}: CANCEL while ringing: 487, both sides told`, async (t) => {
    const uas = await startUa(t);
    const uac = await startUa(t);
    let inEvents: CallEvent[] = [];
    uas.onInvite((call) => {
      inEvents = record(call);
      call.ring(180);
    });
    const call = uac.invite({ target: { transport, host: '127.0.0.1', port: uas.port }, from: 'sip:alice@127.0.0.1', to: 'sip:bob@127.0.0.1', sdp: offer });
    const events = record(call);
    await waitFor(() => has(events, 'provisional'));
    call.cancel();
    await waitFor(() => has(events, 'failed') && has(inEvents, 'cancelled'));
    t.same(events, [['provisional', 180, 'Ringing', undefined], ['failed', 487, 'Request Terminated']]);
    t.same(inEvents, [['cancelled']]);
  });

  t.test(`${transport}: re-INVITE, UPDATE and INFO in the dialog are answered 200`, async (t) => {
    const uas = await startUa(t);
    const uac = await startUa(t);
    let incoming: IncomingCall | undefined;
    uas.onInvite((call) => {
      incoming = call;
      call.answer(answer);
    });
    const call = uac.invite({ target: { transport, host: '127.0.0.1', port: uas.port }, from: 'sip:alice@127.0.0.1', to: 'sip:bob@127.0.0.1', sdp: offer });
    const events = record(call);
    await waitFor(() => has(events, 'answered') && incoming?.state === 'confirmed');
    // drive in-dialog requests from the UAS side through its own dialog, at the wire level
    const statuses = await inDialogProbe(incoming!, ['INVITE', 'UPDATE', 'INFO']);
    t.same(statuses.map((s) => s.status), [200, 200, 200]);
    t.equal(statuses[0].body, offer, 're-INVITE answered with the current local SDP');
    t.equal(call.state, 'confirmed', 'call still up');
    call.bye();
    await waitFor(() => has(events, 'ended'));
  });
}

/** Sends in-dialog requests from an IncomingCall's dialog through its UA, collecting final responses. */
async function inDialogProbe(call: IncomingCall, methods: string[]): Promise<Array<{ status: number; body: string }>> {
  // The dialog and host are private: reach them through the structural types the library uses internally.
  const c = call as unknown as { dialog: import('../../src/sip/index.js').Dialog; host: import('../../src/sip/call-host.js').CallHost };
  const out: Array<{ status: number; body: string }> = [];
  for (const method of methods) {
    const req = c.dialog.createRequest(method);
    if (method === 'INVITE') req.body = sdp(40002, 'callee-reinvite');
    if (method === 'INVITE') req.headers.append('Content-Type', 'application/sdp');
    if (method === 'INVITE') req.headers.append('Contact', c.host.contact(call.source.transport));
    const res = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      c.host.startClientTransaction(req, c.dialog.nextHop(), {
        onResponse: (r) => {
          if (r.status < 200) return;
          if (method === 'INVITE') {
            const ack = c.dialog.createRequest('ACK', Number((req.headers.get('cseq') ?? '').split(' ')[0]));
            c.host.sendStateless(ack, c.dialog.nextHop());
          }
          resolve({ status: r.status, body: r.body });
        },
        onTimeout: () => reject(new Error(`${method} timed out`)),
        onTransportError: reject,
      });
    });
    out.push(res);
  }
  return out;
}

t.test('Timer B: an INVITE to a silent port fails with 408 after retransmissions', async (t) => {
  const uac = await startUa(t);
  const silent = await silentPort(t);
  const call = uac.invite({ target: { transport: 'udp', host: '127.0.0.1', port: silent.port }, from: 'sip:alice@127.0.0.1', to: 'sip:bob@127.0.0.1', sdp: offer });
  const events = record(call);
  await waitFor(() => has(events, 'failed'), 10_000);
  t.same(events, [['failed', 408, 'Request Timeout']]);
  // Timer A doubles from T1 within 64*T1: 1 + 6 retransmissions (at 1,3,7,15,31,63 T1)
  t.ok(silent.received() >= 6 && silent.received() <= 7, `INVITE sent ${silent.received()} times`);
});

t.test('TCP to a closed port fails with 503', async (t) => {
  const uac = await startUa(t);
  const silent = await silentPort(t); // a UDP port: nothing listens on TCP there
  const call = uac.invite({ target: { transport: 'tcp', host: '127.0.0.1', port: silent.port }, from: 'sip:alice@127.0.0.1', to: 'sip:bob@127.0.0.1', sdp: offer });
  const events = record(call);
  await waitFor(() => has(events, 'failed'));
  t.same(events, [['failed', 503, 'Service Unavailable']]);
});

t.test('loss: the first datagrams each way are dropped, the call still completes, one dialog', async (t) => {
  const uas = await startUa(t, { transports: ['udp'] });
  const uac = await startUa(t, { transports: ['udp'] });
  const relay = await lossyRelay(t, uas.port, 2);
  const invites: string[] = [];
  const acks: string[] = [];
  uas.onInvite((call) => {
    invites.push(call.callId);
    const ev = record(call);
    call.on('ack', () => acks.push(call.callId));
    void ev;
    call.answer(answer);
  });
  const call = uac.invite({ target: { transport: 'udp', host: '127.0.0.1', port: relay.port }, from: 'sip:alice@127.0.0.1', to: 'sip:bob@127.0.0.1', sdp: offer });
  const events = record(call);
  await waitFor(() => has(events, 'answered') && acks.length > 0);
  t.equal(relay.dropped(), 4, 'two datagrams dropped each way');
  t.same(invites, [call.callId], 'the handler saw exactly one call despite the retransmissions');
  t.same(events, [['answered', answer]], 'one answered event');
  t.ok(relay.forwarded.filter((l) => l.startsWith('INVITE')).length >= 1);
  call.bye();
  await waitFor(() => has(events, 'ended'));
});

t.test('a CANCEL racing a 200: ACK then BYE', async (t) => {
  const uas = await startUa(t);
  const uac = await startUa(t);
  let inEvents: CallEvent[] = [];
  uas.onInvite((call) => {
    inEvents = record(call);
    call.ring(180);
    call.answer(answer); // answered before the CANCEL can arrive
  });
  const call = uac.invite({ target: { transport: 'udp', host: '127.0.0.1', port: uas.port }, from: 'sip:alice@127.0.0.1', to: 'sip:bob@127.0.0.1', sdp: offer });
  const events = record(call);
  call.cancel(); // before any response: held until the first provisional
  await waitFor(() => has(events, 'ended') && has(inEvents, 'ended'));
  t.same(events.map((e) => e[0]), ['provisional', 'answered', 'ended']);
  t.same(events.at(-1), ['ended', { by: 'local', reason: 'cancelled' }]);
  t.same(inEvents.map((e) => e[0]), ['ack', 'ended'], 'the callee got the ACK, then the BYE');
});

t.test('OPTIONS answered 200; OPTIONS to a silent port rejects', async (t) => {
  const uas = await startUa(t);
  const uac = await startUa(t);
  t.equal(await uac.options({ transport: 'udp', host: '127.0.0.1', port: uas.port }), 200);
  t.equal(await uac.options({ transport: 'tcp', host: '127.0.0.1', port: uas.port }), 200);
  const silent = await silentPort(t);
  await t.rejects(uac.options({ transport: 'udp', host: '127.0.0.1', port: silent.port }), { name: 'SipTimeoutError' });
});

t.test('close() with a call up sends a BYE and leaves nothing running', async (t) => {
  const uas = await startUa(t);
  const uac = await startUa(t);
  let inEvents: CallEvent[] = [];
  uas.onInvite((call) => {
    inEvents = record(call);
    call.answer(answer);
  });
  const call = uac.invite({ target: { transport: 'udp', host: '127.0.0.1', port: uas.port }, from: 'sip:alice@127.0.0.1', to: 'sip:bob@127.0.0.1', sdp: offer });
  const events = record(call);
  await waitFor(() => has(events, 'answered') && has(inEvents, 'ack'));
  await uac.close();
  await waitFor(() => has(inEvents, 'ended'));
  t.same(inEvents.at(-1), ['ended', { by: 'remote', reason: 'bye' }]);
});
