import http from 'node:http';
import https from 'node:https';
import type net from 'node:net';
import t from 'tap';
import WebSocket, { WebSocketServer } from 'ws';
import { SIMULATOR_CERT, SIMULATOR_KEY } from '../../src/sim/push/apns/simulator-tls.js';
import { parseMessage, parseNameAddr, topVia, type IncomingCall, type SipMessage, type SipRequest, type SipResponse, type SipTarget, type UserAgent } from '../../src/sip/index.js';
import { has, record, sdp, startUa, waitFor, type Teardown } from './helpers.js';

/** A browser stand-in: a WebSocket client that speaks SIP by hand, one message per frame. */
interface WsPeer {
  ws: WebSocket;
  received: SipMessage[];
  raw: string[];
  closed: Promise<number>;
  send(text: string): void;
  /** The first received message after `from` that `match` accepts, waited for. */
  next(match: (m: SipMessage) => boolean, what: string, from?: number): Promise<SipMessage>;
}

function connect(t: Teardown, url: string, protocols: string | string[] = 'sip', options: WebSocket.ClientOptions = {}): Promise<WsPeer> {
  const ws = new WebSocket(url, protocols, options);
  const received: SipMessage[] = [];
  const raw: string[] = [];
  ws.on('message', (data: Buffer) => {
    raw.push(data.toString('utf8'));
    try {
      received.push(parseMessage(data));
    } catch {
      // keep-alive answers and the like: only in raw
    }
  });
  const closed = new Promise<number>((r) => ws.once('close', (code) => r(code)));
  t.teardown(() => ws.terminate());
  const peer: WsPeer = {
    ws, received, raw, closed,
    send: (text) => ws.send(text.replace(/\r?\n/g, '\r\n')),
    async next(match, what, from = 0) {
      let found: SipMessage | undefined;
      await waitFor(() => (found = received.slice(from).find(match)) !== undefined, 5000, what);
      return found!;
    },
  };
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(peer));
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res) => reject(new Error(`refused: ${res.statusCode}`)));
  });
}

const isResponse = (status: number, method: string) => (m: SipMessage): m is SipResponse =>
  m.kind === 'response' && m.status === status && m.headers.get('cseq')?.endsWith(method) === true;
const isRequest = (method: string) => (m: SipMessage): m is SipRequest => m.kind === 'request' && m.method === method;

/** A UA serving WebSocket on its own port (plus UDP, so the usual paths stay in play); its ws:// URL. */
async function wsUa(t: Teardown, options: Parameters<typeof startUa>[1] = {}): Promise<{ ua: UserAgent; url: string; warnings: Error[] }> {
  const ua = await startUa(t, { transports: ['udp'], webSocket: { path: '/sip' }, ...options });
  const warnings: Error[] = [];
  ua.on('warning', (e) => warnings.push(e));
  return { ua, url: `ws://127.0.0.1:${ua.webSocket.port()}/sip`, warnings };
}

let seq = 0;
/** A request as JsSIP writes it: Via WS with a .invalid host, Contact with transport=ws;ob, no Content-Length. */
function browserRequest(method: string, o: { callId: string; cseq: number; toTag?: string; body?: string; uri?: string; fromTag?: string }): string {
  const lines = [
    `${method} ${o.uri ?? 'sip:ferry@127.0.0.1'} SIP/2.0`,
    `Via: SIP/2.0/WS df7jal23ls0d.invalid;branch=z9hG4bK${++seq}ws`,
    'Max-Forwards: 70',
    `From: "Alice" <sip:alice@example.com>;tag=${o.fromTag ?? 'alice1'}`,
    `To: <sip:ferry@127.0.0.1>${o.toTag ? `;tag=${o.toTag}` : ''}`,
    `Call-ID: ${o.callId}`,
    `CSeq: ${o.cseq} ${method}`,
    'Contact: <sip:alice@df7jal23ls0d.invalid;transport=ws;ob>',
  ];
  if (o.body) lines.push('Content-Type: application/sdp');
  return `${lines.join('\r\n')}\r\n\r\n${o.body ?? ''}`;
}

function responseTo(req: SipRequest, status: number, reason: string, o: { toTag?: string; body?: string } = {}): string {
  const h = req.headers;
  const lines = [`SIP/2.0 ${status} ${reason}`, ...h.getAll('via').map((v) => `Via: ${v}`), `From: ${h.get('from')}`,
    `To: ${h.get('to')}${o.toTag ? `;tag=${o.toTag}` : ''}`, `Call-ID: ${h.get('call-id')}`, `CSeq: ${h.get('cseq')}`,
    'Contact: <sip:alice@df7jal23ls0d.invalid;transport=ws;ob>'];
  if (o.body) lines.push('Content-Type: application/sdp');
  lines.push(`Content-Length: ${Buffer.byteLength(o.body ?? '')}`);
  return `${lines.join('\r\n')}\r\n\r\n${o.body ?? ''}`;
}

/** The browser calls Ferry and Ferry answers; resolves once the ACK is in. */
async function answeredCallFromBrowser(ua: UserAgent, peer: WsPeer, callId: string): Promise<{ call: IncomingCall; ok: SipResponse }> {
  let call: IncomingCall | undefined;
  ua.onInvite((c) => {
    call = c;
    c.answer(sdp(41000));
  });
  peer.send(browserRequest('INVITE', { callId, cseq: 1, body: sdp(42000, 'alice') }));
  const ok = (await peer.next((m) => isResponse(200, 'INVITE')(m) && m.headers.get('call-id') === callId, '200 to INVITE')) as SipResponse;
  const toTag = parseNameAddr(ok.headers.get('to')!).tag!;
  peer.send(browserRequest('ACK', { callId, cseq: 1, toTag }));
  await waitFor(() => call?.state === 'confirmed', 5000, 'ACK');
  return { call: call!, ok };
}

t.test('a browser calls Ferry over WS: 100, 180, 200 over the connection, ACK, BYE', async (t) => {
  const { ua, url } = await wsUa(t);
  const peer = await connect(t, url);
  let call: IncomingCall | undefined;
  ua.onInvite((c) => {
    call = c;
    c.ring();
    c.answer(sdp(41000));
  });
  peer.send(browserRequest('INVITE', { callId: 'call-1@df7jal23ls0d.invalid', cseq: 1, body: sdp(42000, 'alice') }));
  const ok = (await peer.next(isResponse(200, 'INVITE'), '200')) as SipResponse;
  t.ok(peer.received.some(isResponse(100, 'INVITE')), '100 Trying');
  t.ok(peer.received.some(isResponse(180, 'INVITE')), '180 Ringing');
  t.equal(call!.source.transport, 'ws', 'the call came over ws');
  t.equal(call!.sdp, sdp(42000, 'alice'), 'the offer without Content-Length: the frame bounds the message');
  const via = topVia(ok);
  t.same([via.transport, via.host], ['WS', 'df7jal23ls0d.invalid'], 'the browser\'s own Via, answered over the connection');
  const contact = parseNameAddr(ok.headers.get('contact')!).sip!;
  t.equal(contact.params.transport, 'ws', 'our Contact names transport=ws');
  t.equal(contact.port, ua.webSocket.port(), 'and the WebSocket port');
  t.equal(ok.body, sdp(41000));

  const events = record(call!);
  const toTag = parseNameAddr(ok.headers.get('to')!).tag!;
  peer.send(browserRequest('ACK', { callId: 'call-1@df7jal23ls0d.invalid', cseq: 1, toTag }));
  await waitFor(() => has(events, 'ack'), 5000, 'ack');
  peer.send(browserRequest('BYE', { callId: 'call-1@df7jal23ls0d.invalid', cseq: 2, toTag }));
  await peer.next(isResponse(200, 'BYE'), '200 to BYE');
  await waitFor(() => has(events, 'ended'), 5000, 'ended');
  t.same(events.find((e) => e[0] === 'ended')![1], { by: 'remote', reason: 'bye' });
  t.equal(ua.webSocket.flowCount, 1, 'the connection stays up for the next call');
});

t.test('Ferry calls a registered browser over its connection; the browser answers; Ferry hangs up', async (t) => {
  const { ua, url } = await wsUa(t);
  const bindings = new Map<string, { contact: string; flow: SipTarget }>();
  ua.onRequest('REGISTER', (r) => {
    const contact = r.request.headers.get('contact')!;
    bindings.set(parseNameAddr(r.request.headers.get('to')!).uri, { contact: parseNameAddr(contact).uri, flow: r.source });
    r.respond(200, { headers: [['Contact', `${contact};expires=600`]] });
  });
  const peer = await connect(t, url);
  peer.send(browserRequest('REGISTER', { callId: 'reg-1', cseq: 1, uri: 'sip:127.0.0.1' }));
  const registered = await peer.next(isResponse(200, 'REGISTER'), '200 to REGISTER');
  t.match(registered.headers.get('contact'), /expires=600/, 'the handler answered');
  const binding = bindings.get('sip:ferry@127.0.0.1')!;
  t.equal(binding.flow.transport, 'ws');
  t.ok(binding.flow.flow, 'the source names the connection');

  const call = ua.invite({ target: binding.flow, requestUri: binding.contact, from: 'sip:ferry@127.0.0.1', to: 'sip:alice@example.com', sdp: sdp(43000) });
  const events = record(call);
  const invite = (await peer.next(isRequest('INVITE'), 'INVITE at the browser')) as SipRequest;
  t.equal(invite.uri, 'sip:alice@df7jal23ls0d.invalid;transport=ws;ob', 'addressed to the registered Contact');
  t.equal(topVia(invite).transport, 'WS', 'Via WS');
  t.equal(parseNameAddr(invite.headers.get('contact')!).sip!.params.transport, 'ws');
  peer.send(responseTo(invite, 180, 'Ringing', { toTag: 'b1' }));
  peer.send(responseTo(invite, 200, 'OK', { toTag: 'b1', body: sdp(44000, 'alice') }));
  await waitFor(() => has(events, 'answered'), 5000, 'answered');
  const ack = (await peer.next(isRequest('ACK'), 'ACK over the flow')) as SipRequest;
  t.equal(ack.uri, 'sip:alice@df7jal23ls0d.invalid;transport=ws;ob', 'the ACK went to the .invalid Contact over the connection');
  t.ok(has(events, 'provisional'), '180 surfaced');

  call.bye();
  const bye = (await peer.next(isRequest('BYE'), 'BYE over the flow')) as SipRequest;
  peer.send(responseTo(bye, 200, 'OK'));
  await waitFor(() => has(events, 'ended'), 5000, 'ended');
  t.same(events.find((e) => e[0] === 'ended')![1], { by: 'local', reason: 'bye' });
});

t.test('the handshake: only the sip subprotocol, only the path; a shared HTTP server keeps its other upgrades', async (t) => {
  const server = http.createServer();
  const other = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req, socket, head) => {
    if (req.url === '/chat') other.handleUpgrade(req, socket, head, (ws) => ws.send('chat here'));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise<void>((r) => {
    server.closeAllConnections();
    server.close(() => r());
  }));
  const ua = await startUa(t, { transports: ['udp'] });
  ua.webSocket.attach(server, { path: '/sip', verify: (req) => !req.url?.includes('token=bad') });
  const base = `ws://127.0.0.1:${(server.address() as net.AddressInfo).port}`;

  await t.rejects(connect(t, `${base}/sip`, 'chat'), /refused: 400/, 'another subprotocol is refused');
  await t.rejects(connect(t, `${base}/sip`, []), /refused: 400/, 'no subprotocol is refused');
  await t.rejects(connect(t, `${base}/sip?token=bad`), /refused: 403/, 'verify says no: 403');
  t.equal(ua.webSocket.flowCount, 0, 'none of those became a flow');

  const peer = await connect(t, `${base}/sip?token=good`, ['chat', 'sip']);
  t.equal(peer.ws.protocol, 'sip', 'sip chosen among several');
  t.equal(ua.webSocket.port(), (server.address() as net.AddressInfo).port, 'the shared server\'s port is ours');
  peer.send(browserRequest('OPTIONS', { callId: 'opt-1', cseq: 1 }));
  await peer.next(isResponse(200, 'OPTIONS'), '200 to OPTIONS');

  const chat = new WebSocket(`${base}/chat`);
  t.teardown(() => chat.terminate());
  const said = await new Promise<string>((r) => chat.once('message', (d: Buffer) => r(d.toString())));
  t.equal(said, 'chat here', 'the other path still reaches its own listener');

  const own = await wsUa(t);
  await t.rejects(connect(t, own.url.replace('/sip', '/elsewhere')), /refused: 404/, 'its own server refuses other paths');
});

t.test('an oversize frame is dropped, a huge one closes that connection only (1009); blank pings get a pong', async (t) => {
  const { ua, url, warnings } = await wsUa(t, { maxMessageBytes: 2048 });
  const peer = await connect(t, url);
  const bulky = browserRequest('OPTIONS', { callId: 'big', cseq: 1 }).replace('Max-Forwards: 70', `Subject: ${'x'.repeat(3000)}\r\nMax-Forwards: 70`);
  peer.send(bulky);
  await waitFor(() => warnings.some((w) => /larger than 2048/.test(w.message)), 5000, 'oversize reported');
  peer.send(browserRequest('OPTIONS', { callId: 'after-big', cseq: 1 }));
  const ok = await peer.next(isResponse(200, 'OPTIONS'), '200 after the dropped frame');
  t.equal(ok.headers.get('call-id'), 'after-big', 'the oversize message got no answer, the next one did');
  t.equal(peer.received.length, 1);

  peer.ws.send('\r\n\r\n');
  await waitFor(() => peer.raw.includes('\r\n'), 5000, 'pong');

  const other = await connect(t, url);
  other.ws.send('x'.repeat(5000));
  t.equal(await other.closed, 1009, 'beyond twice the cap: closed as Message Too Big');
  peer.send(browserRequest('OPTIONS', { callId: 'still-here', cseq: 2 }));
  await peer.next((m) => isResponse(200, 'OPTIONS')(m) && m.headers.get('call-id') === 'still-here', 'the first connection still answered');
  t.equal(ua.webSocket.flowCount, 1);
});

t.test('a closed connection ends its calls: answered (ended), ringing to the browser (503), offered (cancelled)', async (t) => {
  const { ua, url } = await wsUa(t);
  const flowsClosed: SipTarget[] = [];
  ua.on('flowClosed', (f) => flowsClosed.push(f));

  const a = await connect(t, url);
  const { call } = await answeredCallFromBrowser(ua, a, 'close-1');
  const events = record(call);
  t.ok(ua.webSocket.isOpen(call.source), 'the flow is open during the call');
  a.ws.terminate();
  await waitFor(() => has(events, 'ended'), 5000, 'ended');
  t.same(events.find((e) => e[0] === 'ended')![1], { by: 'remote', reason: 'transport closed' });
  t.equal(flowsClosed.length, 1, 'flowClosed told the registrar');
  t.equal(flowsClosed[0].flow, call.source.flow);
  t.notOk(ua.webSocket.isOpen(call.source), 'and closed after');
  await t.rejects(ua.webSocket.send(Buffer.from('x'), call.source), { name: 'SipTransportError' }, 'the flow cannot be sent to any more');

  const b = await connect(t, url);
  let flow: SipTarget | undefined;
  ua.onRequest('REGISTER', (r) => {
    flow = r.source;
    r.respond(200);
  });
  b.send(browserRequest('REGISTER', { callId: 'reg-2', cseq: 1, uri: 'sip:127.0.0.1' }));
  await b.next(isResponse(200, 'REGISTER'), 'registered');
  const out = ua.invite({ target: flow!, requestUri: 'sip:alice@df7jal23ls0d.invalid;transport=ws', from: 'sip:ferry@127.0.0.1', to: 'sip:alice@example.com', sdp: sdp(43000) });
  const outEvents = record(out);
  const invite = (await b.next(isRequest('INVITE'), 'INVITE')) as SipRequest;
  b.send(responseTo(invite, 180, 'Ringing', { toTag: 'r1' }));
  await waitFor(() => has(outEvents, 'provisional'), 5000, 'ringing');
  b.ws.close();
  await waitFor(() => has(outEvents, 'failed'), 5000, 'failed');
  t.same(outEvents.find((e) => e[0] === 'failed')!.slice(1), [503, 'Service Unavailable'], 'a transport error, not a 32 s timeout');

  const c = await connect(t, url);
  let offered: IncomingCall | undefined;
  ua.onInvite((call) => (offered = call));
  c.send(browserRequest('INVITE', { callId: 'close-3', cseq: 1, body: sdp(42000, 'alice') }));
  await waitFor(() => offered !== undefined, 5000, 'offered');
  const cancelled = new Promise<void>((r) => offered!.once('cancelled', () => r()));
  c.ws.terminate();
  await cancelled;
  t.equal(offered!.state, 'cancelled', 'the caller went away before the answer');
  t.equal(ua.webSocket.flowCount, 0);
});

t.test('keep-alive: a connection that does not answer pings is closed; one that does stays', async (t) => {
  const { ua, url } = await wsUa(t, { webSocketPingIntervalMs: 30 });
  const lively = await connect(t, url);
  let pings = 0;
  lively.ws.on('ping', () => pings++);
  const mute = await connect(t, url, 'sip', { autoPong: false });
  await mute.closed;
  await waitFor(() => pings >= 3, 5000, 'pings');
  t.equal(lively.ws.readyState, WebSocket.OPEN, 'the answering connection is open after several pings');
  t.equal(ua.webSocket.flowCount, 1, 'only the mute one was dropped');
});

t.test('WSS on an HTTPS server: Via and Contact say WSS/wss; requests without a live flow are refused', async (t) => {
  const server = https.createServer({ cert: SIMULATOR_CERT, key: SIMULATOR_KEY });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise<void>((r) => {
    server.closeAllConnections();
    server.close(() => r());
  }));
  const ua = await startUa(t, { transports: ['udp'] });
  ua.webSocket.attach(server, { path: '/sip' });
  let flow: SipTarget | undefined;
  ua.onRequest('register', (r) => {
    flow = r.source;
    r.respond(200);
  });
  const peer = await connect(t, `wss://127.0.0.1:${(server.address() as net.AddressInfo).port}/sip`, 'sip', { ca: SIMULATOR_CERT });
  peer.send(browserRequest('REGISTER', { callId: 'reg-wss', cseq: 1 }).replace('SIP/2.0/WS ', 'SIP/2.0/WSS '));
  await peer.next(isResponse(200, 'REGISTER'), 'registered');
  t.equal(flow!.transport, 'wss');
  void ua.options(flow!, { requestUri: 'sip:alice@df7jal23ls0d.invalid;transport=ws' }).catch(() => undefined);
  const options = (await peer.next(isRequest('OPTIONS'), 'OPTIONS from Ferry')) as SipRequest;
  t.equal(topVia(options).transport, 'WSS');
  t.equal(parseNameAddr(options.headers.get('contact')!).sip!.params.transport, 'wss');

  await t.rejects(ua.options({ transport: 'ws', host: '127.0.0.1', port: 1 }), { name: 'SipTransportError' }, 'no flow named');
  await t.rejects(ua.options({ transport: 'ws', host: '127.0.0.1', port: 1, flow: 'nope' }), { name: 'SipTransportError' }, 'an unknown flow');
});

t.test('out-of-dialog requests: REGISTER is 405 without a handler; a handler is listed in Allow; a throwing one answers 500', async (t) => {
  const { ua, url } = await wsUa(t);
  const peer = await connect(t, url);
  peer.send(browserRequest('REGISTER', { callId: 'r1', cseq: 1 }));
  const refused = await peer.next(isResponse(405, 'REGISTER'), '405');
  t.notMatch(refused.headers.get('allow'), /REGISTER/);
  t.throws(() => ua.onRequest('BYE', () => undefined), /core/, 'the core keeps BYE');

  ua.onRequest('REGISTER', () => {
    throw new Error('registrar bug');
  });
  peer.send(browserRequest('REGISTER', { callId: 'r2', cseq: 1 }));
  await peer.next(isResponse(500, 'REGISTER'), '500 from a throwing handler');
  ua.onRequest('REGISTER', async () => {
    await Promise.resolve();
    throw new Error('registrar storage down');
  });
  peer.send(browserRequest('REGISTER', { callId: 'r2b', cseq: 1 }));
  await peer.next((m) => isResponse(500, 'REGISTER')(m) && m.headers.get('call-id') === 'r2b', '500 from a rejecting async handler');
  peer.send(browserRequest('OPTIONS', { callId: 'o1', cseq: 1 }));
  const ok = await peer.next(isResponse(200, 'OPTIONS'), 'OPTIONS');
  t.match(ok.headers.get('allow'), /, REGISTER$/, 'Allow lists the handled method');

  ua.onRequest('REGISTER', undefined);
  peer.send(browserRequest('REGISTER', { callId: 'r3', cseq: 1 }));
  await peer.next((m) => isResponse(405, 'REGISTER')(m) && m.headers.get('call-id') === 'r3', '405 again once removed');
});
