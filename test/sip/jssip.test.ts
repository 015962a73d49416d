/**
 * JsSIP (the browser SIP library the dialer can use) as an independent peer of Ferry's SIP-over-WebSocket server,
 * run in Node: the `ws` package stands in for the browser's WebSocket, and a peer connection that only writes SDP
 * stands in for WebRTC, which is not what this test is about (the dialer's browser test covers media). Everything
 * SIP (REGISTER, INVITE, ACK, BYE both ways) is JsSIP's own code over a real loopback WebSocket.
 */
import t from 'tap';
import WebSocket from 'ws';
import { parseNameAddr, type IncomingCall, type SipTarget } from '../../src/sip/index.js';
import { has, record, sdp, startUa, waitFor } from './helpers.js';

/** The part of RTCPeerConnection JsSIP drives, with SDP and nothing else: gathering is always complete. */
class SdpOnlyPeerConnection extends EventTarget {
  iceGatheringState = 'complete';
  iceConnectionState = 'new';
  signalingState = 'stable';
  localDescription: { type: string; sdp: string } | null = null;
  remoteDescription: { type: string; sdp: string } | null = null;

  createOffer(): Promise<{ type: string; sdp: string }> {
    return Promise.resolve({ type: 'offer', sdp: sdp(45000, 'jssip') });
  }

  createAnswer(): Promise<{ type: string; sdp: string }> {
    return Promise.resolve({ type: 'answer', sdp: sdp(45002, 'jssip') });
  }

  setLocalDescription(d: { type: string; sdp: string }): Promise<void> {
    this.localDescription = d;
    this.signalingState = d.type === 'offer' ? 'have-local-offer' : 'stable';
    return Promise.resolve();
  }

  setRemoteDescription(d: { type: string; sdp: string }): Promise<void> {
    this.remoteDescription = d;
    this.signalingState = d.type === 'offer' ? 'have-remote-offer' : 'stable';
    return Promise.resolve();
  }

  getSenders(): [] {
    return [];
  }

  getReceivers(): [] {
    return [];
  }

  close(): void {
    this.signalingState = 'closed';
  }
}

const g = globalThis as Record<string, unknown>;
g.WebSocket ??= WebSocket;
g.RTCPeerConnection ??= SdpOnlyPeerConnection;
g.RTCSessionDescription ??= class {
  constructor(init: { type: string; sdp: string }) {
    Object.assign(this, init);
  }
};
g.window ??= globalThis;

const noMedia = { mediaConstraints: { audio: false, video: false } };

interface JsSession {
  on(event: string, fn: (e: unknown) => void): void;
  answer(options: object): void;
  terminate(): void;
  isEstablished(): boolean;
  isEnded(): boolean;
}

t.test('JsSIP registers, calls Ferry and hangs up; Ferry calls JsSIP over its flow, JsSIP answers, Ferry hangs up', async (t) => {
  const JsSIP = (await import('jssip')).default;
  const ua = await startUa(t, { transports: ['udp'], webSocket: { path: '/ws' } });
  const bindings: Array<{ contact: string; flow: SipTarget }> = [];
  ua.onRequest('REGISTER', (r) => {
    const contact = r.request.headers.get('contact') ?? '';
    const expires = /;\s*expires=0\b/.test(contact) || r.request.headers.get('expires') === '0' ? 0 : 600;
    if (expires > 0) bindings.push({ contact: parseNameAddr(contact).uri, flow: r.source });
    r.respond(200, { toTag: 'reg', headers: [['Contact', `${contact.replace(/;\s*expires=\d+/i, '')};expires=${expires}`]] });
  });

  const socket = new JsSIP.WebSocketInterface(`ws://127.0.0.1:${ua.webSocket.port()}/ws`);
  const phone = new JsSIP.UA({ sockets: [socket], uri: 'sip:alice@127.0.0.1', register: true, register_expires: 600, user_agent: 'JsSIP under test' });
  const sessions: JsSession[] = [];
  phone.on('newRTCSession', (e: { session: unknown; originator: string }) => {
    const session = e.session as JsSession;
    sessions.push(session);
    if (e.originator === 'remote') session.answer(noMedia);
  });
  let registered = false;
  let unregistered = false;
  let registrationFailed = '';
  phone.on('registered', () => (registered = true));
  phone.on('unregistered', () => (unregistered = true));
  phone.on('registrationFailed', (e: { cause?: string }) => (registrationFailed = e.cause ?? 'failed'));
  phone.start();
  t.teardown(() => phone.stop());
  await waitFor(() => registered || registrationFailed !== '', 5000, 'registration');
  t.equal(registrationFailed, '', 'no registration failure');
  t.ok(registered, 'JsSIP accepted the registrar\'s 200');
  t.equal(bindings[0].flow.transport, 'ws');
  t.match(bindings[0].contact, /\.invalid;transport=ws/, 'JsSIP registered its .invalid Contact');

  // JsSIP calls Ferry
  let incoming: IncomingCall | undefined;
  ua.onInvite((call) => {
    incoming = call;
    call.ring();
    call.answer(sdp(41000));
  });
  const out = phone.call('sip:ferry@127.0.0.1', noMedia) as unknown as JsSession;
  let outConfirmed = false;
  let outEnded = '';
  out.on('confirmed', () => (outConfirmed = true));
  out.on('failed', (e) => (outEnded = `failed ${(e as { cause: string }).cause}`));
  out.on('ended', () => (outEnded = 'ended'));
  await waitFor(() => outConfirmed || outEnded !== '', 5000, 'JsSIP call confirmed');
  t.equal(outEnded, '', 'JsSIP did not fail the call');
  t.equal(incoming!.sdp, sdp(45000, 'jssip'), 'Ferry got JsSIP\'s offer');
  t.equal(incoming!.source.transport, 'ws');
  const inEvents = record(incoming!);
  await waitFor(() => incoming!.state === 'confirmed', 5000, 'ACK from JsSIP');
  out.terminate();
  await waitFor(() => has(inEvents, 'ended'), 5000, 'Ferry saw the BYE');
  t.same(inEvents.find((e) => e[0] === 'ended')![1], { by: 'remote', reason: 'bye' });
  await waitFor(() => outEnded === 'ended', 5000, 'JsSIP ended');

  // Ferry calls JsSIP at its registered Contact, over its connection
  const binding = bindings[bindings.length - 1];
  const call = ua.invite({ target: binding.flow, requestUri: binding.contact, from: 'sip:ferry@127.0.0.1', to: 'sip:alice@127.0.0.1', sdp: sdp(43000) });
  const events = record(call);
  await waitFor(() => has(events, 'answered') || has(events, 'failed'), 5000, 'JsSIP answered');
  t.notOk(has(events, 'failed'), 'JsSIP did not refuse the call');
  t.equal(events.find((e) => e[0] === 'answered')![1], sdp(45002, 'jssip'), 'JsSIP\'s answer');
  const answering = sessions[sessions.length - 1];
  await waitFor(() => answering.isEstablished(), 5000, 'JsSIP confirmed (got our ACK)');
  call.bye();
  await waitFor(() => has(events, 'ended'), 5000, 'BYE answered');
  t.same(events.find((e) => e[0] === 'ended')![1], { by: 'local', reason: 'bye' });
  await waitFor(() => answering.isEnded(), 5000, 'JsSIP ended on our BYE');

  phone.unregister();
  await waitFor(() => unregistered, 5000, 'unregistered');
  t.ok(unregistered, 'the registrar took the unregistration too');

  // Ferry closing the connection fails JsSIP's lingering transactions, so stop() need not wait 2 s for them
  let disconnected = false;
  phone.on('disconnected', () => (disconnected = true));
  await ua.close();
  await waitFor(() => disconnected, 5000, 'JsSIP saw the connection close');
  phone.stop();
});
