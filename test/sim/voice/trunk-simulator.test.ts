import t from 'tap';
import { generateDtmf, generateTone } from '../../../src/rtp/index.js';
import { VoiceTrunkSimulator } from '../../../src/sim/voice/trunk-simulator.js';
import { dial, event, has, readAnswer, sleep, startCaller, until, FAST } from './helpers.js';

// Media ports of this file's own (test/rtp uses 41000-41499; the admin routes test 42400-42799).
const CALLER_PORTS = { min: 42000, max: 42199 };
const SIM_PORTS = { min: 42200, max: 42319 };

const sim = new VoiceTrunkSimulator();
await sim.start({ mediaPortRange: SIM_PORTS, timers: FAST });
t.teardown(() => sim.stop());
const caller = await startCaller(t, CALLER_PORTS);

/** The simulator's record of a caller's call, once it is complete. */
const settledCall = (callId: string) => sim.waitFor((c) => c.callId === callId && c.state !== 'ringing' && c.state !== 'answered');

t.test('answered: 1 s of 1 kHz from the caller is recorded; the caller hangs up', async (t) => {
  const d = await dial(caller, sim, '+233201234567');
  await until(() => has(d.events, 'answered'), 5000, 'answer');
  t.same(d.events.map((e) => e[0]), ['provisional', 'answered'], '180 first, then the answer');
  t.equal(event(d.events, 'provisional')?.[1], 180);
  const answer = readAnswer(event(d.events, 'answered')![1] as string);
  t.same(answer.codecs, ['PCMU'], "the offer's first G.711, alone");
  t.equal(answer.dtmfPayloadType, 101, 'telephone-event taken as offered');
  const live = await sim.waitFor((c) => c.callId === d.call.callId);
  t.equal(live.state, 'answered');
  t.equal(live.to, '+233201234567', 'the called number from the Request-URI');
  t.equal(live.from, '+233200000001');

  const played = d.media.played();
  d.media.play(generateTone([1000], 1000));
  await played;
  await sleep(200); // the last packets land
  d.call.bye();
  await until(() => has(d.events, 'ended'), 5000, 'ended');
  const rec = await settledCall(d.call.callId);
  t.equal(rec.state, 'ended');
  t.equal(rec.endedBy, 'caller');
  t.equal(rec.transport, 'udp');
  t.equal(rec.codec, 'PCMU');
  t.equal(rec.status, 200);
  t.ok(rec.answeredAt !== null && rec.endedAt !== null && rec.endedAt >= rec.answeredAt);
  t.ok(rec.audio, 'audio measured');
  t.ok(Math.abs(rec.audio!.dominantFrequencyHz - 1000) < 5, `dominant ${rec.audio!.dominantFrequencyHz} Hz`);
  t.ok(rec.audio!.seconds > 0.95 && rec.audio!.seconds < 1.05, `${rec.audio!.seconds} s recorded`);
  t.ok(rec.audio!.nonSilentShare > 0.95, 'all of it tone');
  t.ok(rec.audio!.rmsDbfs > -20 && rec.audio!.rmsDbfs < 0);
  const wav = rec.wav();
  t.equal(wav.subarray(0, 4).toString('latin1'), 'RIFF');
  t.equal(wav.length, 44 + Math.round(rec.audio!.seconds * 8000) * 2, 'the recording, 16-bit at 8 kHz');
  t.same(rec.digitsReceived, '');
});

for (const code of [486, 404, 503, 603]) {
  t.test(`…${code}: the caller fails with ${code}`, async (t) => {
    const d = await dial(caller, sim, `+23320000${code}`);
    await until(() => has(d.events, 'failed'), 5000, 'failure');
    t.same(d.events.map((e) => e.slice(0, 2)), [['failed', code]]);
    const rec = await settledCall(d.call.callId);
    t.equal(rec.state, 'rejected');
    t.equal(rec.status, code);
    t.equal(rec.endedBy, 'trunk');
    t.equal(rec.audio, null, 'no media for a refused call');
    t.equal(rec.wav().length, 44, 'an empty WAV');
    await d.media.stop();
  });
}

t.test('an offer without G.711 is refused with 488', async (t) => {
  const g722 = ['v=0', 'o=caller 1 1 IN IP4 127.0.0.1', 's=-', 'c=IN IP4 127.0.0.1', 't=0 0', 'm=audio 42198 RTP/AVP 9', 'a=rtpmap:9 G722/8000', ''].join('\r\n');
  const call = caller.ua.invite({ target: { transport: 'udp', host: '127.0.0.1', port: sim.port }, from: 'sip:+233200000001@127.0.0.1', to: 'sip:+233201234567@127.0.0.1', sdp: g722 });
  const failed = await new Promise<number>((resolve) => call.once('failed', (code) => resolve(code)));
  t.equal(failed, 488);
  const rec = await settledCall(call.callId);
  t.match(rec, { state: 'rejected', status: 488, codec: null, audio: null });
});

t.test('…480 rings until the caller cancels: 487, state canceled', async (t) => {
  const d = await dial(caller, sim, '+233200000480');
  await until(() => has(d.events, 'provisional'), 5000, 'ringing');
  await sleep(300); // still ringing: nothing else comes
  t.same(d.events.map((e) => e.slice(0, 2)), [['provisional', 180]]);
  t.equal((await sim.waitFor((c) => c.callId === d.call.callId)).state, 'ringing');
  d.call.cancel();
  await until(() => has(d.events, 'failed'), 5000, '487');
  t.same(d.events.at(-1)?.slice(0, 2), ['failed', 487]);
  const rec = await settledCall(d.call.callId);
  t.equal(rec.state, 'canceled');
  t.equal(rec.status, 487);
  t.equal(rec.endedBy, 'caller');
  await d.media.stop();
});

t.test('…555: the far end hangs up', async (t) => {
  const d = await dial(caller, sim, '+233200000555');
  await until(() => has(d.events, 'ended'), 8000, 'the trunk BYE');
  t.same(d.events.map((e) => e[0]), ['provisional', 'answered', 'ended']);
  t.same(event(d.events, 'ended')?.[1], { by: 'remote', reason: 'bye' });
  const rec = await settledCall(d.call.callId);
  t.equal(rec.state, 'ended');
  t.equal(rec.endedBy, 'trunk');
  await d.media.stop();
});

t.test('…77: the caller receives 1234# once each, as RFC 4733 events', async (t) => {
  const d = await dial(caller, sim, '+233200000077');
  await until(() => d.digits.length >= 5, 8000, 'five digits');
  await sleep(400); // a repeated digit would arrive by now
  t.same(d.digits, ['1:rfc4733', '2:rfc4733', '3:rfc4733', '4:rfc4733', '#:rfc4733']);
  t.equal(d.call.state, 'confirmed', 'the call stays up');
  const live = await sim.waitFor((c) => c.callId === d.call.callId);
  t.equal(live.digitsSent, '1234#');
  // …and the caller's digits reach the trunk
  d.media.sendDigits('9*');
  await until(() => live.digitsReceived.length >= 2, 5000, 'digits at the trunk');
  d.call.bye();
  const rec = await settledCall(d.call.callId);
  t.equal(rec.digitsReceived, '9*');
  await d.media.stop();
});

t.test('…88: the trunk plays 1 s of 440 Hz to the caller', async (t) => {
  const d = await dial(caller, sim, '+233200000088', { record: 10 });
  await until(() => has(d.events, 'answered'), 5000, 'answer');
  await sleep(2000); // the tone (1 s from the answer) and its last packets
  d.call.bye();
  await until(() => has(d.events, 'ended'), 5000, 'ended');
  const { recording, stats } = await d.media.stop();
  t.equal(stats.packetsReceived, 50, '50 frames of 20 ms');
  const { analyzeAudio } = await import('../../../src/audio/index.js');
  const heard = analyzeAudio(recording!, 8000);
  t.ok(Math.abs(heard.dominantFrequencyHz - 440) < 5, `heard ${heard.dominantFrequencyHz} Hz`);
  t.ok(Math.abs(heard.durationSeconds - 1) < 0.05);
});

t.test('PCMA offered first: answered with PCMA, the recording still decodes right', async (t) => {
  const d = await dial(caller, sim, '+233201111112', { codecs: ['PCMA', 'PCMU'] });
  await until(() => has(d.events, 'answered'), 5000, 'answer');
  t.same(readAnswer(event(d.events, 'answered')![1] as string).codecs, ['PCMA']);
  const played = d.media.played();
  d.media.play(generateTone([1000], 1000));
  await played;
  await sleep(200);
  d.call.bye();
  const rec = await settledCall(d.call.callId);
  t.equal(rec.codec, 'PCMA');
  t.ok(Math.abs(rec.audio!.dominantFrequencyHz - 1000) < 5, `dominant ${rec.audio!.dominantFrequencyHz} Hz`);
  t.ok(rec.audio!.nonSilentShare > 0.95);
  await d.media.stop();
});

t.test('…183: early media with SDP, then the answer', async (t) => {
  const d = await dial(caller, sim, '+233200000183');
  await until(() => has(d.events, 'answered'), 5000, 'answer');
  t.same(d.events.map((e) => e.slice(0, 2)), [['provisional', 183], ['answered', event(d.events, 'answered')![1]]]);
  t.ok(typeof event(d.events, 'provisional')![3] === 'string', 'the 183 carries SDP');
  t.equal(readAnswer(event(d.events, 'provisional')![3] as string).port, readAnswer(event(d.events, 'answered')![1] as string).port, 'the same media');
  d.call.bye();
  await settledCall(d.call.callId);
  await d.media.stop();
});

t.test('…66: no telephone-event in the answer; in-band digits from the caller still counted', async (t) => {
  const d = await dial(caller, sim, '+233200000066');
  await until(() => has(d.events, 'answered'), 5000, 'answer');
  t.equal(readAnswer(event(d.events, 'answered')![1] as string).dtmfPayloadType, null);
  const live = await sim.waitFor((c) => c.callId === d.call.callId);
  const played = d.media.played();
  d.media.play(generateDtmf('42'));
  await played;
  await until(() => live.digitsReceived.length >= 2, 5000, 'in-band digits');
  t.equal(live.digitsReceived, '42');
  t.ok(sim.sendDigits(live.id, '5'), 'the trunk sends digits in-band');
  d.call.bye();
  await settledCall(d.call.callId);
  await d.media.stop();
});

t.test('controls: bye, digits and play act on live calls only; unknown ids throw', async (t) => {
  const d = await dial(caller, sim, '+233209999999');
  await until(() => has(d.events, 'answered'), 5000, 'answer');
  const live = await sim.waitFor((c) => c.callId === d.call.callId);
  t.ok(sim.play(live.id, generateTone([600], 100)));
  t.throws(() => sim.sendDigits(live.id, 'x'), RangeError);
  t.throws(() => sim.bye('nope'), RangeError);
  t.ok(sim.bye(live.id));
  await until(() => has(d.events, 'ended'), 5000, 'ended');
  t.same(event(d.events, 'ended')?.[1], { by: 'remote', reason: 'bye' });
  const rec = await settledCall(d.call.callId);
  t.equal(rec.endedBy, 'trunk');
  t.notOk(sim.bye(rec.id), 'a finished call cannot be hung up again');
  t.notOk(sim.sendDigits(rec.id, '1'));
  await d.media.stop();
});

t.test('digest: a wrong password fails 401, the right one is answered', async (t) => {
  const authSim = new VoiceTrunkSimulator();
  await authSim.start({ mediaPortRange: { min: 42370, max: 42399 }, auth: { realm: 'trunk.test', users: { ferry: 's3cret' } }, timers: FAST });
  t.teardown(() => authSim.stop());
  const wrong = await dial(caller, authSim, '+233201234567', { credentials: { username: 'ferry', password: 'nope' } });
  await until(() => has(wrong.events, 'failed'), 5000, '401');
  t.same(wrong.events.map((e) => e.slice(0, 2)), [['failed', 401]]);
  t.equal(authSim.calls().length, 0, 'an unauthenticated INVITE is no call');
  const none = await dial(caller, authSim, '+233201234567');
  await until(() => has(none.events, 'failed'), 5000, '401');
  t.same(none.events.map((e) => e.slice(0, 2)), [['failed', 401]], 'no credentials: 401');
  const right = await dial(caller, authSim, '+233201234567', { credentials: { username: 'ferry', password: 's3cret' } });
  await until(() => has(right.events, 'answered'), 5000, 'answer');
  t.equal(authSim.calls().length, 1);
  right.call.bye();
  await authSim.waitFor((c) => c.state === 'ended');
  await Promise.all([wrong.media.stop(), none.media.stop(), right.media.stop()]);
});

t.test('TCP: a TCP-only trunk answers over TCP; stop() hangs up its live call', async (t) => {
  const tcpSim = new VoiceTrunkSimulator();
  await tcpSim.start({ transport: 'tcp', mediaPortRange: { min: 42340, max: 42369 }, timers: FAST });
  t.match(tcpSim.url, /^sip:127\.0\.0\.1:\d+;transport=tcp$/);
  const d = await dial(caller, tcpSim, '+233201234567', { transport: 'tcp' });
  await until(() => has(d.events, 'answered'), 5000, 'answer');
  const live = await tcpSim.waitFor((c) => c.callId === d.call.callId);
  t.equal(live.transport, 'tcp');
  await tcpSim.stop();
  await until(() => has(d.events, 'ended'), 5000, 'the BYE of stop()');
  t.same(event(d.events, 'ended')?.[1], { by: 'remote', reason: 'bye' });
  t.equal(live.state, 'ended');
  t.equal(live.endedBy, 'trunk');
  t.equal(tcpSim.calls().length, 1, 'the history outlives stop()');
  await d.media.stop();
});

t.test('maxCallSeconds: the trunk ends an answered call that lasts too long', async (t) => {
  const shortSim = new VoiceTrunkSimulator();
  await shortSim.start({ mediaPortRange: { min: 42320, max: 42339 }, maxCallSeconds: 0.3, timers: FAST });
  t.teardown(() => shortSim.stop());
  const d = await dial(caller, shortSim, '+233201234567');
  await until(() => has(d.events, 'ended'), 5000, 'the trunk BYE');
  t.same(d.events.map((e) => e[0]), ['provisional', 'answered', 'ended']);
  t.same(event(d.events, 'ended')?.[1], { by: 'remote', reason: 'bye' });
  const rec = await shortSim.waitFor((c) => c.state === 'ended');
  t.equal(rec.endedBy, 'trunk');
  await d.media.stop();
});

t.test('a REFER is carried out as the Refer-To number\'s plan says, and …44 refuses it', async (t) => {
  const d = await dial(caller, sim, '+233201234567');
  await until(() => has(d.events, 'answered'), 5000, 'answer');
  const progress: Array<{ status: number; final: boolean }> = [];
  d.call.on('referProgress', (p) => progress.push({ status: p.status, final: p.final }));
  t.equal((await d.call.refer('sip:+233207777001@127.0.0.1')).status, 202, 'accepted');
  await until(() => progress.some((p) => p.final), 5000, 'the transfer reported');
  t.same(progress.map((p) => p.status), [100, 180, 200], 'Trying, Ringing, then answered');
  const live = await sim.waitFor((c) => c.callId === d.call.callId);
  t.same(live.transfer, { to: '+233207777001', status: 200 }, 'the simulator keeps where the call went');
  t.equal((await d.call.refer('sip:+233207777486@127.0.0.1')).status, 202);
  await until(() => progress.filter((p) => p.final).length === 2, 5000, 'the second report');
  t.equal(progress.at(-1)!.status, 486, 'a busy transfer target reported as 486');
  d.call.bye();
  await until(() => has(d.events, 'ended'), 5000, 'ended');

  const refusing = await dial(caller, sim, '+233201234544');
  await until(() => has(refusing.events, 'answered'), 5000, 'answer');
  t.equal((await refusing.call.refer('sip:+233207777001@127.0.0.1')).status, 501, '…44 refuses transfers: the caller must bridge');
  t.equal((await sim.waitFor((c) => c.callId === refusing.call.callId)).transfer, null);
  refusing.call.bye();
  await until(() => has(refusing.events, 'ended'), 5000, 'ended');
});
