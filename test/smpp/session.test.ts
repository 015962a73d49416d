import net from 'node:net';
import t from 'tap';
import { bindClient, connect } from '../../src/smpp/client.js';
import { encodePdu } from '../../src/smpp/codec.js';
import { CommandId, CommandStatus } from '../../src/smpp/constants.js';
import { SessionClosedError, SmppBindError, SmppQueueFullError, SmppTimeoutError } from '../../src/smpp/errors.js';
import type { Pdu } from '../../src/smpp/pdu.js';
import { SmppServer, type SmppServerOptions } from '../../src/smpp/server.js';
import { NO_RESPONSE, type Session } from '../../src/smpp/session.js';
import { rawConnect, rawServer } from './fixtures/raw-peer.js';

/** The part of a tap test these helpers need. */
interface Teardown {
  teardown(fn: () => unknown): void;
}

const submit = (n = 0): { command: 'submit_sm'; destination_addr: string; short_message: Buffer } => ({
  command: 'submit_sm',
  destination_addr: '4470000' + n,
  short_message: Buffer.from('hi ' + n),
});

async function startServer(t: Teardown, options: SmppServerOptions): Promise<SmppServer> {
  const server = new SmppServer(options);
  await server.listen(0);
  t.teardown(() => server.close());
  return server;
}

async function client(t: Teardown, port: number, extra: Partial<Parameters<typeof bindClient>[0]> = {}): Promise<Session> {
  const s = await bindClient({ host: '127.0.0.1', port, bindType: 'transceiver', system_id: 'esme', password: 'pw', ...extra });
  t.teardown(() => s.close());
  return s;
}

function waitFor(cond: () => boolean, limitMs = 5000): Promise<void> {
  const start = Date.now();
  return new Promise((resolve, reject) => {
    const check = (): void => {
      if (cond()) return resolve();
      if (Date.now() - start > limitMs) return reject(new Error('condition not reached'));
      setTimeout(check, 5);
    };
    check();
  });
}


t.test('window: never more than W outstanding at the peer; all complete', async (t) => {
  const W = 5;
  let outstanding = 0;
  let maxOutstanding = 0;
  const held: Array<() => void> = [];
  const server = await startServer(t, {
    onRequest: () =>
      new Promise((resolve) => {
        outstanding++;
        maxOutstanding = Math.max(maxOutstanding, outstanding);
        held.push(() => {
          outstanding--;
          resolve({ message_id: 'm' });
        });
      }),
  });
  const c = await client(t, server.port, { windowSize: W, maxQueue: 100 });
  const all = Promise.all(Array.from({ length: 60 }, (_, i) => c.request(submit(i))));
  let clientMax = 0;
  // Release held responses a few at a time until every request is answered (bounded in rounds).
  for (let round = 0; round < 500 && (held.length > 0 || c.windowInUse > 0 || c.queued > 0); round++) {
    await waitFor(() => held.length > 0 || (c.windowInUse === 0 && c.queued === 0));
    clientMax = Math.max(clientMax, c.windowInUse);
    held.splice(0, 2).forEach((release) => release());
    await new Promise((r) => setTimeout(r, 2));
  }
  const responses = await all;
  t.equal(responses.length, 60);
  t.ok(responses.every((r) => r.command === 'submit_sm_resp' && r.command_status === 0));
  t.equal(maxOutstanding, W, 'the peer saw exactly W outstanding at most');
  t.ok(clientMax <= W);
  t.equal(c.stats.requestsSent - 1, 60, 'bind + 60 submits sent');
});

t.test('request resolves with any command_status; the caller decides', async (t) => {
  const server = await startServer(t, { onRequest: () => ({ command_status: CommandStatus.ESME_RTHROTTLED }) });
  const c = await client(t, server.port);
  const resp = await c.request(submit());
  t.equal(resp.command_status, CommandStatus.ESME_RTHROTTLED);
  t.equal(c.stats.responsesByStatus.ESME_RTHROTTLED, 1);
});

t.test('per-request timeout on a silent peer frees the slot', async (t) => {
  const server = await startServer(t, { onRequest: () => NO_RESPONSE });
  const c = await client(t, server.port, { responseTimeoutMs: 150, windowSize: 1 });
  const err = await c.request(submit()).catch((e: unknown) => e);
  t.type(err, SmppTimeoutError);
  t.equal((err as SmppTimeoutError).command, 'submit_sm');
  t.equal(c.stats.timeouts, 1);
  t.equal(c.windowInUse, 0);
  const second = await c.request(submit(), { timeoutMs: 60 }).catch((e: unknown) => e);
  t.type(second, SmppTimeoutError, 'the next request got the freed slot and its own timeout');
  t.equal(c.state, 'bound', 'a timeout does not close the session');
});

t.test('close() fails everything pending (in flight and queued) with SessionClosedError', async (t) => {
  const server = await startServer(t, { onRequest: () => NO_RESPONSE });
  const c = await client(t, server.port, { windowSize: 3, maxQueue: 20 });
  const pending = Array.from({ length: 10 }, (_, i) => c.request(submit(i)).then(() => 'resolved', (e: unknown) => e));
  await waitFor(() => c.windowInUse === 3);
  t.equal(c.queued, 7);
  c.close();
  const results = await Promise.all(pending);
  t.ok(results.every((r) => r instanceof SessionClosedError && r.reason === 'local'));
  const after = await c.request(submit()).catch((e: unknown) => e);
  t.type(after, SessionClosedError);
});

t.test('peer closing fails pending requests with reason peer_closed', async (t) => {
  const server = await startServer(t, { onRequest: () => NO_RESPONSE });
  const c = await client(t, server.port);
  const p = c.request(submit()).catch((e: unknown) => e);
  await waitFor(() => server.sessions.size === 1 && c.windowInUse === 1);
  for (const s of server.sessions) s.socket.destroy();
  const err = await p;
  t.type(err, SessionClosedError);
  t.equal((err as SessionClosedError).reason, 'peer_closed');
});

t.test('a peer that stops reading: requests back-pressure, memory stays bounded', async (t) => {
  const raw = await rawServer((peer) => peer.socket.pause()); // accepts, never reads, never answers
  t.teardown(() => raw.close());
  const c = await connect({ host: '127.0.0.1', port: raw.port, windowSize: 1000, maxQueue: 50, responseTimeoutMs: 60_000 });
  t.teardown(() => c.close());
  const big = Buffer.alloc(60_000, 0x61);
  const outcomes: Array<Promise<unknown>> = [];
  // Offer 100 large requests every 10 ms until the kernel buffers are full and nothing more leaves
  // (bounded: at most 100 waves, i.e. 10,000 requests and about two seconds).
  let stableWaves = 0;
  for (let wave = 0; wave < 100 && stableWaves < 10; wave++) {
    const before = c.stats.requestsSent;
    for (let i = 0; i < 100; i++) {
      outcomes.push(c.request({ command: 'submit_sm', destination_addr: String(i), tlvs: { message_payload: big } }).then(() => 'resolved', (e: unknown) => e));
    }
    await new Promise((r) => setTimeout(r, 10));
    stableWaves = c.stats.requestsSent === before ? stableWaves + 1 : 0;
  }
  t.equal(stableWaves, 10, 'sending stopped: the peer is not reading');
  const sent = c.stats.requestsSent;
  t.ok(sent < 1000, `sent ${sent} of a 1000 window: held back by socket back-pressure, not by the window`);
  t.ok(c.pendingWriteBytes < 1_000_000, `user-space write backlog ${c.pendingWriteBytes} octets stays bounded`);
  t.equal(c.queued, 50, 'the wait queue is full at its bound');
  t.equal(c.stats.queueRejections, outcomes.length - sent - 50, 'everything beyond in-flight + queue was refused at once');
  await new Promise((r) => setTimeout(r, 200));
  t.equal(c.stats.requestsSent, sent, 'nothing more is sent while the peer does not read');
  c.close();
  const results = await Promise.all(outcomes);
  t.equal(results.filter((r) => r instanceof SmppQueueFullError).length, c.stats.queueRejections);
  t.equal(results.filter((r) => r instanceof SessionClosedError).length, sent + 50);
});

t.test('garbage and impossible command_length close only that session', async (t) => {
  const closes: string[] = [];
  const server = await startServer(t, {
    onRequest: () => ({ message_id: 'ok' }),
    onSession: (s) => s.on('close', (reason) => closes.push(reason)),
  });
  const good = await client(t, server.port);

  const garbage = await rawConnect(server.port);
  garbage.socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
  await garbage.ended;
  t.ok(garbage.received.some((p) => p.command === 'generic_nack' && p.command_status === CommandStatus.ESME_RINVCMDLEN), 'told why before closing');

  const tooShort = await rawConnect(server.port);
  const header = Buffer.alloc(16);
  header.writeUInt32BE(8, 0);
  tooShort.socket.write(header);
  await tooShort.ended;

  const badBody = await rawConnect(server.port);
  const unterminated = Buffer.concat([encodePdu({ command: 'enquire_link', sequence_number: 3 }), Buffer.from('abc')]);
  unterminated.writeUInt32BE(unterminated.length, 0);
  unterminated.writeUInt32BE(CommandId.bind_transmitter, 4);
  badBody.socket.write(unterminated);
  await badBody.ended;

  t.same(closes, ['decode_error', 'decode_error', 'decode_error']);
  const resp = await good.request(submit());
  t.equal(resp.command_status, 0, 'the other session on the same server keeps working');
  t.equal((resp as { message_id: string }).message_id, 'ok');
  t.equal(server.sessions.size, 1);
});

t.test('unknown command_id gets generic_nack ESME_RINVCMDID and the session stays open', async (t) => {
  const server = await startServer(t, {});
  const raw = await rawConnect(server.port);
  t.teardown(() => raw.socket.destroy());
  const unknown = encodePdu({ command: 'enquire_link', sequence_number: 5 });
  unknown.writeUInt32BE(0x00000999, 4);
  raw.socket.write(unknown);
  const nack = await raw.next((p) => p.command === 'generic_nack');
  t.equal(nack.command_status, CommandStatus.ESME_RINVCMDID);
  t.equal(nack.sequence_number, 5);
  raw.send({ command: 'enquire_link', sequence_number: 6 });
  const resp = await raw.next((p) => p.command === 'enquire_link_resp');
  t.equal(resp.sequence_number, 6, 'enquire_link answered, even before bind');
});

t.test('bind state machine: before bind, receiver-only, authentication statuses', async (t) => {
  const server = await startServer(t, {
    authenticate: (bind) =>
      bind.system_id !== 'esme'
        ? { status: CommandStatus.ESME_RINVSYSID }
        : bind.password !== 'pw'
          ? { status: CommandStatus.ESME_RINVPASWD }
          : Promise.resolve({ status: CommandStatus.ESME_ROK, system_id: 'SMSC' }),
    onRequest: () => ({ message_id: 'x' }),
  });
  const wrongPw = await bindClient({ host: '127.0.0.1', port: server.port, bindType: 'transmitter', system_id: 'esme', password: 'no' }).catch((e: unknown) => e);
  t.type(wrongPw, SmppBindError);
  t.equal((wrongPw as SmppBindError).status, CommandStatus.ESME_RINVPASWD);
  const wrongId = await bindClient({ host: '127.0.0.1', port: server.port, bindType: 'transmitter', system_id: 'who', password: 'pw' }).catch((e: unknown) => e);
  t.equal((wrongId as SmppBindError).status, CommandStatus.ESME_RINVSYSID);

  const unbound = await connect({ host: '127.0.0.1', port: server.port });
  t.teardown(() => unbound.close());
  t.equal((await unbound.request(submit())).command_status, CommandStatus.ESME_RINVBNDSTS, 'submit before bind');
  const resp = await unbound.bind('receiver', { system_id: 'esme', password: 'pw' });
  t.equal((resp as { system_id: string }).system_id, 'SMSC');
  t.equal(unbound.state, 'bound');
  t.equal((await unbound.request(submit())).command_status, CommandStatus.ESME_RINVBNDSTS, 'a receiver may not submit');
  const again = await unbound.request({ command: 'bind_transmitter', system_id: 'esme', password: 'pw' });
  t.equal(again.command_status, CommandStatus.ESME_RALYBND);
  const [serverSide] = [...server.sessions].filter((s) => s.bindType === 'receiver');
  t.equal(serverSide.systemId, 'esme');
});

t.test('handler errors and the incoming limit', async (t) => {
  let calls = 0;
  const server = await startServer(t, {
    maxIncoming: 2,
    onRequest: (pdu: Pdu) => {
      calls++;
      if ((pdu as { destination_addr: string }).destination_addr === 'throw') throw new Error('boom');
      if ((pdu as { destination_addr: string }).destination_addr === 'reject') return Promise.reject(new Error('boom'));
      return new Promise((r) => setTimeout(() => r({ message_id: 'slow' }), 100));
    },
  });
  const c = await client(t, server.port);
  t.equal((await c.request({ command: 'submit_sm', destination_addr: 'throw' })).command_status, CommandStatus.ESME_RSYSERR);
  t.equal((await c.request({ command: 'submit_sm', destination_addr: 'reject' })).command_status, CommandStatus.ESME_RSYSERR);
  const three = await Promise.all([1, 2, 3].map((i) => c.request(submit(i))));
  t.same(three.map((r) => r.command_status).sort(), [0, 0, CommandStatus.ESME_RTHROTTLED].sort());
  t.equal(calls, 4);
});

t.test('enquire_link: answered, sent when idle, and a silent peer is closed', async (t) => {
  const server = await startServer(t, {});
  const c = await client(t, server.port, { enquireLinkIntervalMs: 40 });
  await waitFor(() => c.stats.enquireLinksSent >= 2);
  const [serverSide] = server.sessions;
  await waitFor(() => serverSide.stats.enquireLinksReceived >= 2);
  t.equal(serverSide.stats.responsesSent, serverSide.stats.enquireLinksReceived + 1, 'server answered the bind and every keep-alive');
  t.equal(c.state, 'bound');

  // A peer that binds and then never answers anything.
  const silent = await rawServer((peer) => {
    peer.next((p) => p.command === 'bind_transceiver').then((b) => peer.send({ command: 'bind_transceiver_resp', sequence_number: b.sequence_number, system_id: 'mute' }));
  });
  t.teardown(() => silent.close());
  const s = await bindClient({ host: '127.0.0.1', port: silent.port, bindType: 'transceiver', system_id: 'a', password: 'b', enquireLinkIntervalMs: 30, responseTimeoutMs: 80 });
  const reason = await new Promise((r) => s.once('close', r));
  t.equal(reason, 'enquire_link_timeout');
});

t.test('unbind handshake both ways', async (t) => {
  const serverCloses: string[] = [];
  const server = await startServer(t, { onSession: (s) => s.on('close', (r) => serverCloses.push(r)) });
  const c = await client(t, server.port);
  await c.unbind();
  t.equal(c.state, 'closed');
  t.equal(c.closeReason, 'unbind');
  await waitFor(() => serverCloses.length === 1);
  t.same(serverCloses, ['peer_unbind']);

  const c2 = await client(t, server.port);
  let unbindEvent = false;
  c2.on('unbind', () => (unbindEvent = true));
  await waitFor(() => [...server.sessions].some((s) => s.state === 'bound'));
  const [serverSide] = [...server.sessions].filter((s) => s.state === 'bound');
  await serverSide.unbind();
  await c2.waitClosed();
  t.ok(unbindEvent);
  t.equal(c2.closeReason, 'peer_unbind');
  t.equal(serverSide.closeReason, 'unbind');
});

t.test('idle timeout closes an unbound connection', async (t) => {
  const server = await startServer(t, { idleTimeoutMs: 60 });
  const raw = await rawConnect(server.port);
  await raw.ended;
  t.equal(server.sessions.size, 0);
});

t.test('TCP_NODELAY on accepted and connected sockets', async (t) => {
  // Node exposes no getter; check that setNoDelay(true) was called on both ends.
  const calls: boolean[] = [];
  const original = net.Socket.prototype.setNoDelay;
  net.Socket.prototype.setNoDelay = function (this: net.Socket, noDelay?: boolean) {
    calls.push(noDelay ?? true);
    return original.call(this, noDelay);
  };
  t.teardown(() => {
    net.Socket.prototype.setNoDelay = original;
  });
  const server = await startServer(t, {});
  await client(t, server.port);
  await waitFor(() => server.sessions.size === 1);
  t.ok(calls.filter((c) => c).length >= 2, `setNoDelay(true) called ${calls.length} times`);
});
