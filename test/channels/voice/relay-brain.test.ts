// The relay brain (an agent's customer-run model over a WebSocket) against the scripted relay customer, over real
// sockets on 127.0.0.1: the setup frame and its signature, streamed tokens spoken sentence by sentence, keys, audio,
// barge-in dropping the rest of an answer, the end with handoff data, frames that are invalid, too large or too many
// ignored and counted, and every way a relay can fail (refused URL, refused or silent connection, a server that closes,
// stops answering pings or leaves a prompt unanswered). No storage: nothing here touches a database.
import { createServer as createTcpServer, type Socket } from 'node:net';
import t, { type Test } from 'tap';
import type { BrainFailure, BrainSetup } from '../../../src/channels/voice/agents/agent-brain.js';
import {
  RelayBrain,
  RelayError,
  relaySignature,
  relayTargetCheck,
  verifyRelaySignature,
  type RelayBrainOptions,
  type RelayTargetCheck,
} from '../../../src/channels/voice/agents/relay/index.js';
import { TargetGuard } from '../../../src/security/target-guard.js';
import { RelayCustomer, type RelayCustomerOptions } from '../../../src/sim/voice/relay-customer.js';
import { waitFor } from '../../helpers/wait.js';

t.setTimeout(60_000);

const SECRET = 'whsec_' + Buffer.from('relay-test-secret-24-byt').toString('base64');
const OTHER_SECRET = 'whsec_' + Buffer.from('another-secret-of-24-byt').toString('base64');

const SETUP: BrainSetup = {
  callId: 'call_relay_1',
  accountId: 'acc_relay',
  agentId: 'agent_relay',
  agentVersion: 3,
  from: '+14155550100',
  to: '+14155550111',
  direction: 'outbound',
  variables: { company: 'Acme', orderId: 'A-17' },
  language: 'en-US',
};

/** The guard of these tests: 127.0.0.1 only, connected to as given. */
const loopbackOnly: RelayTargetCheck = async (url) => {
  if (url.hostname !== '127.0.0.1') throw new Error(`${url.hostname} is not 127.0.0.1`);
  return { address: '127.0.0.1', family: 4 };
};

type Event = { name: 'say'; text: string; last: boolean } | { name: 'play' | 'digits'; value: string } | { name: 'end'; handoff: Record<string, unknown> | null } | { name: 'failed'; failure: BrainFailure };

function recordEvents(brain: RelayBrain): Event[] {
  const events: Event[] = [];
  brain.on('say', (text, last) => events.push({ name: 'say', text, last }));
  brain.on('play', (value) => events.push({ name: 'play', value }));
  brain.on('digits', (value) => events.push({ name: 'digits', value }));
  brain.on('end', (handoff) => events.push({ name: 'end', handoff }));
  brain.on('failed', (failure) => events.push({ name: 'failed', failure }));
  return events;
}

async function customer(t: Test, o: RelayCustomerOptions = {}): Promise<RelayCustomer> {
  const c = new RelayCustomer({ secrets: [SECRET], ...o });
  await c.start();
  t.teardown(() => c.stop());
  return c;
}

function brainOf(t: Test, url: string, o: Partial<RelayBrainOptions> = {}): { brain: RelayBrain; events: Event[] } {
  const brain = new RelayBrain({ url, signingSecrets: [SECRET], checkTarget: loopbackOnly, ...o });
  t.teardown(() => brain.close());
  return { brain, events: recordEvents(brain) };
}

const says = (events: Event[]): Array<[string, boolean]> => events.flatMap((e) => (e.name === 'say' ? [[e.text, e.last] as [string, boolean]] : []));
const failures = (events: Event[]): BrainFailure[] => events.flatMap((e) => (e.name === 'failed' ? [e.failure] : []));

async function rejection(p: Promise<unknown>): Promise<RelayError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof RelayError) return err;
    throw err;
  }
  throw new Error('expected start() to reject');
}

t.test('setup: sent first, with the call, over a signed connection', async (t) => {
  const relay = await customer(t);
  const { brain } = brainOf(t, relay.url);
  await brain.start(SETUP);
  const conn = await relay.connection();
  const setup = await conn.waitForFrame('setup');
  t.same(setup, { type: 'setup', ...SETUP }, 'every field of the call');
  t.equal(conn.received[0].type, 'setup', 'the first frame');
  t.same(conn.signature, { ok: true }, 'the signature verifies with the account secret');
  t.match(conn.headers['x-ferry-signature'], /^v1,[A-Za-z0-9+/]+=*$/);
  t.match(conn.headers['x-ferry-timestamp'], /^[0-9]+$/);
  t.equal(conn.path, '/relay');
});

t.test('a prompt answered by streamed tokens is spoken sentence by sentence, the last marked', async (t) => {
  const relay = await customer(t, {
    rules: [{ prompt: 'my order', reply: [{ say: 'Thanks for calling Acme. Your order A-17 ships tomorrow! Is there anything else?' }] }],
  });
  const { brain, events } = brainOf(t, relay.url);
  await brain.start(SETUP);
  const conn = await relay.connection();
  brain.prompt('Where is my order');
  const prompt = await conn.waitForFrame('prompt');
  t.same(prompt, { type: 'prompt', voicePrompt: 'Where is my order', last: true, lang: 'en-US' });
  await waitFor(() => says(events).some(([, last]) => last), 5000, 'the last sentence');
  t.same(says(events), [
    ['Thanks for calling Acme.', false],
    ['Your order A-17 ships tomorrow!', false],
    ['Is there anything else?', true],
  ]);
  t.ok(conn.sent.length > 3, 'the answer came as many token frames');
  t.same(failures(events), []);
});

t.test('keys both ways, audio played as many times as asked', async (t) => {
  const relay = await customer(t, {
    rules: [{ dtmf: '1', reply: [{ play: 'https://media.example.com/hold.wav', loop: 2 }, { digits: '12#' }, { say: 'Done.' }] }],
  });
  const { brain, events } = brainOf(t, relay.url);
  await brain.start(SETUP);
  const conn = await relay.connection();
  brain.dtmf('1');
  t.same(await conn.waitForFrame('dtmf'), { type: 'dtmf', digit: '1' });
  await waitFor(() => says(events).length > 0, 5000, 'the answer');
  t.same(events, [
    { name: 'play', value: 'https://media.example.com/hold.wav' },
    { name: 'play', value: 'https://media.example.com/hold.wav' },
    { name: 'digits', value: '12#' },
    { name: 'say', text: 'Done.', last: true },
  ]);
});

t.test('an interrupt is sent and the rest of the answer in progress is dropped', async (t) => {
  // The test plays the customer by hand, so which frames come before and after the interrupt is certain.
  const relay = await customer(t);
  const { brain, events } = brainOf(t, relay.url);
  await brain.start(SETUP);
  const conn = await relay.connection();
  brain.prompt('Where is my order');
  await conn.waitForFrame('prompt');
  for (const token of ['Your order ', 'is on its way. ', 'It left ', 'the depot']) conn.send({ type: 'text', token, last: false });
  await waitFor(() => says(events).length === 1, 5000, 'the first sentence');
  brain.interrupt('Your order is');
  const interrupt = await conn.waitForFrame('interrupt');
  t.equal(interrupt.utteranceUntilInterrupt, 'Your order is');
  t.ok(Number.isInteger(interrupt.durationUntilInterruptMs) && (interrupt.durationUntilInterruptMs as number) >= 0, 'a duration in whole ms');
  // Tokens still on the way when the customer got the interrupt, then a marker proving they were all read.
  conn.send({ type: 'text', token: ' this morning. More later.', last: true });
  conn.send({ type: 'sendDigits', digits: '9' });
  await waitFor(() => events.some((e) => e.name === 'digits'), 5000, 'the marker');
  t.same(says(events), [['Your order is on its way.', false]], 'neither the held-back text nor the late tokens are spoken');

  brain.prompt('And my refund?');
  await conn.waitForFrame('prompt', 2);
  conn.send({ type: 'text', token: 'Your refund was sent.', last: true });
  await waitFor(() => says(events).length === 2, 5000, 'the next answer');
  t.same(says(events)[1], ['Your refund was sent.', true], 'the next answer is spoken whole');
});

t.test('end with handoff data: text before it is said, then the call ends; a close afterwards is no failure', async (t) => {
  const relay = await customer(t, {
    rules: [{ prompt: 'person', reply: [{ say: 'Connecting you now.', last: false }, { end: JSON.stringify({ reason: 'wants a human', queue: 'support' }) }, { close: 1000 }] }],
  });
  const { brain, events } = brainOf(t, relay.url);
  await brain.start(SETUP);
  const conn = await relay.connection();
  brain.prompt('Let me talk to a person');
  await conn.waitForClose();
  await waitFor(() => events.some((e) => e.name === 'end'), 5000, 'the end');
  t.same(events, [
    { name: 'say', text: 'Connecting you now.', last: true },
    { name: 'end', handoff: { reason: 'wants a human', queue: 'support' } },
  ]);
  brain.prompt('hello?');
  t.same(failures(events), [], 'no failure after the relay ended the call');
});

t.test('invalid frames are ignored and counted; the call goes on', async (t) => {
  const relay = await customer(t);
  const { brain, events } = brainOf(t, relay.url);
  await brain.start(SETUP);
  const conn = await relay.connection();
  const bad = [
    'not json',
    '[1,2]',
    '{"type":"nope"}',
    '{"token":"no type"}',
    '{"type":"text","token":42}',
    '{"type":"play","source":"file:///etc/passwd"}',
    '{"type":"play","source":"http://media.example.com/a.wav"}',
    '{"type":"sendDigits","digits":"12x"}',
    '{"type":"end","handoffData":17}',
  ];
  for (const raw of bad) conn.sendRaw(raw);
  conn.sendRaw(Buffer.from([1, 2, 3]));
  conn.send({ type: 'text', token: 'Still here.', last: true });
  await waitFor(() => says(events).length === 1, 5000, 'the valid frame');
  t.same(events, [{ name: 'say', text: 'Still here.', last: true }], 'only the valid frame acted on');
  t.same(brain.frameCounts(), { received: bad.length + 2, ignored: bad.length + 1, invalid: bad.length, oversize: 0, rateLimited: 0, binary: 1 });
});

t.test('a frame over the size limit is dropped, the next one read; one over 1 MiB closes the relay', async (t) => {
  const relay = await customer(t);
  const { brain, events } = brainOf(t, relay.url);
  await brain.start(SETUP);
  const conn = await relay.connection();
  conn.send({ type: 'text', token: 'x'.repeat(70_000), last: true });
  conn.send({ type: 'text', token: 'Small enough.', last: true });
  await waitFor(() => says(events).length === 1, 5000, 'the small frame');
  t.same(says(events), [['Small enough.', true]]);
  t.equal(brain.frameCounts().oversize, 1);
  // Past the hard limit the socket itself refuses the frame: the conversation cannot go on.
  conn.send({ type: 'text', token: 'x'.repeat(1_100_000), last: true });
  t.equal(await conn.waitForClose(), 1009);
  await waitFor(() => failures(events).length > 0, 5000, 'the failure');
  t.match(failures(events), [{ code: 'RELAY_CLOSED', message: /payload/i }]);
});

t.test('frames past the rate limit are dropped and counted', async (t) => {
  const relay = await customer(t);
  // A clock that stands still: the bucket (twice the rate) is never refilled.
  const now = Date.now();
  const { brain, events } = brainOf(t, relay.url, { maxFramesPerSecond: 5, clock: () => now });
  await brain.start(SETUP);
  const conn = await relay.connection();
  for (let i = 0; i < 14; i++) conn.send({ type: 'sendDigits', digits: '1' });
  await waitFor(() => brain.frameCounts().received === 14, 5000, 'every frame read');
  t.equal(events.filter((e) => e.name === 'digits').length, 10, 'the burst allowed');
  t.equal(brain.frameCounts().rateLimited, 4);
});

t.test('start rejects: URL refused by the guard, connection refused, no answer to the upgrade, signature refused', async (t) => {
  const relay = await customer(t);

  const refusedByGuard = new RelayBrain({ url: relay.url, signingSecrets: [SECRET], checkTarget: async () => Promise.reject(new Error('private address')) });
  const e1 = await rejection(refusedByGuard.start(SETUP));
  t.equal(e1.code, 'RELAY_URL_REFUSED');
  t.match(e1.message, /private address/);

  // The daemon's guard: private targets refused in a deployment, allowed on a developer's machine.
  const strict = new RelayBrain({ url: relay.url, signingSecrets: [SECRET], checkTarget: relayTargetCheck(new TargetGuard(false).resolver) });
  t.equal((await rejection(strict.start(SETUP))).code, 'RELAY_URL_REFUSED');
  t.equal(relay.connections.length, 0, 'nothing reached the customer');
  const lenient = new RelayBrain({ url: relay.url, signingSecrets: [SECRET], checkTarget: relayTargetCheck(new TargetGuard(true).resolver) });
  t.teardown(() => lenient.close());
  await lenient.start(SETUP);
  t.same((await relay.connection()).signature, { ok: true }, 'the platform guard lets it through where private targets are allowed');

  const closed = createTcpServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
  const port = (closed.address() as { port: number }).port;
  await new Promise<void>((r) => closed.close(() => r()));
  const refused = new RelayBrain({ url: `ws://127.0.0.1:${port}/`, signingSecrets: [SECRET], checkTarget: loopbackOnly });
  t.equal((await rejection(refused.start(SETUP))).code, 'RELAY_CONNECT_FAILED');

  // A server that takes the connection and never answers the upgrade.
  const sockets: Socket[] = [];
  const silent = createTcpServer((s) => sockets.push(s));
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  t.teardown(() => {
    for (const s of sockets) s.destroy();
    silent.close();
  });
  const slow = new RelayBrain({ url: `ws://127.0.0.1:${(silent.address() as { port: number }).port}/`, signingSecrets: [SECRET], checkTarget: loopbackOnly, connectTimeoutMs: 300 });
  t.equal((await rejection(slow.start(SETUP))).code, 'RELAY_CONNECT_TIMEOUT');

  const strictCustomer = await customer(t, { secrets: [OTHER_SECRET], rejectBadSignature: true });
  const wrongSecret = new RelayBrain({ url: strictCustomer.url, signingSecrets: [SECRET], checkTarget: loopbackOnly });
  const e5 = await rejection(wrongSecret.start(SETUP));
  t.equal(e5.code, 'RELAY_REJECTED');
  t.match(e5.message, /401/);
  t.equal(strictCustomer.refused, 1);
  t.equal(strictCustomer.connections.length, 0);
  const rightSecret = new RelayBrain({ url: strictCustomer.url, signingSecrets: [OTHER_SECRET, SECRET], checkTarget: loopbackOnly });
  t.teardown(() => rightSecret.close());
  await rightSecret.start(SETUP);
  t.same((await strictCustomer.connection()).signature, { ok: true }, 'a rotation: any one of the secrets verifies');
});

t.test('the signature: HMAC over timestamp.url, refused for another secret, URL or an old timestamp', async (t) => {
  const url = 'wss://relay.example.com/ferry?agent=1';
  const ts = 1_700_000_000;
  const signature = relaySignature([SECRET], ts, url);
  const check = (o: { secrets?: string[]; url?: string; now?: number; timestamp?: string }) =>
    verifyRelaySignature({ secrets: o.secrets ?? [SECRET], signature, timestamp: o.timestamp ?? String(ts), url: o.url ?? url, now: o.now ?? ts + 10 });
  t.same(check({}), { ok: true });
  t.same(check({ secrets: [OTHER_SECRET] }), { ok: false, reason: 'the signature does not match' });
  t.same(check({ url: 'wss://relay.example.com/ferry?agent=2' }), { ok: false, reason: 'the signature does not match' });
  t.same(check({ timestamp: String(ts + 1) }), { ok: false, reason: 'the signature does not match' });
  t.same(check({ now: ts + 301 }), { ok: false, reason: 'the timestamp is too old or too new' });
  t.equal(relaySignature([SECRET], ts, 'wss://relay.example.com'), relaySignature([SECRET], ts, 'wss://relay.example.com/'), 'the URL is signed normalised');
});

t.test('the relay closing mid-call: failed RELAY_CLOSED, once', async (t) => {
  const relay = await customer(t);
  const { brain, events } = brainOf(t, relay.url);
  await brain.start(SETUP);
  const conn = await relay.connection();
  brain.prompt('Hello');
  await conn.waitForFrame('prompt');
  conn.close(1011);
  await waitFor(() => failures(events).length > 0, 5000, 'the failure');
  t.equal(failures(events)[0].code, 'RELAY_CLOSED');
  t.match(failures(events)[0].message, /1011/);
  brain.prompt('Hello?');
  await brain.close();
  t.equal(failures(events).length, 1, 'one failure, nothing after it');
});

t.test('a relay that stops answering pings: failed RELAY_CLOSED', async (t) => {
  const answering = await customer(t);
  // Long enough between pings that a busy test machine still reads each pong before the next ping is due.
  const healthy = brainOf(t, answering.url, { pingIntervalMs: 150 });
  await healthy.brain.start(SETUP);
  const conn = await answering.connection();
  await waitFor(() => conn.pings >= 2, 5000, 'two pings');
  t.same(failures(healthy.events), [], 'pongs keep the relay alive');

  const mute = await customer(t, { answerPings: false });
  const { brain, events } = brainOf(t, mute.url, { pingIntervalMs: 30 });
  await brain.start(SETUP);
  await waitFor(() => failures(events).length > 0, 5000, 'the failure');
  t.same(failures(events), [{ code: 'RELAY_CLOSED', message: 'the relay stopped answering pings' }]);
});

t.test('a prompt left unanswered: failed RELAY_TIMEOUT once, the relay told and the socket closed', async (t) => {
  const relay = await customer(t);
  const { brain, events } = brainOf(t, relay.url, { responseTimeoutMs: 200 });
  await brain.start(SETUP);
  const conn = await relay.connection();
  brain.prompt('Anyone there?');
  await waitFor(() => failures(events).length > 0, 5000, 'the timeout');
  t.equal(failures(events)[0].code, 'RELAY_TIMEOUT');
  t.same(await conn.waitForFrame('end'), { type: 'end', reason: 'relay-timeout' });
  t.equal(await conn.waitForClose(), 1000);
  t.equal(failures(events).length, 1, 'one failure');
});

t.test('an answer stalling mid-stream times out too', async (t) => {
  const relay = await customer(t, { rules: [{ prompt: 'hi', reply: [{ tokens: ['Hello, ', 'I am '], last: false }] }] });
  const { brain, events } = brainOf(t, relay.url, { responseTimeoutMs: 200 });
  await brain.start(SETUP);
  brain.prompt('hi');
  await waitFor(() => failures(events).length > 0, 5000, 'the timeout');
  t.match(failures(events)[0], { code: 'RELAY_TIMEOUT', message: /stalled/ });
});

t.test('close(): the relay gets end and a normal close; idempotent; start afterwards refused', async (t) => {
  const relay = await customer(t, { rules: [{ setup: true, reply: [{ say: 'Hello from the relay.' }] }] });
  const { brain, events } = brainOf(t, relay.url);
  await brain.start(SETUP);
  const conn = await relay.connection();
  await waitFor(() => says(events).length === 1, 5000, 'the greeting');
  t.same(says(events), [['Hello from the relay.', true]], 'the relay may speak first, answering setup');
  await Promise.all([brain.close(), brain.close()]);
  t.same(await conn.waitForFrame('end'), { type: 'end', reason: 'call-ended' });
  t.equal(await conn.waitForClose(), 1000);
  t.same(failures(events), [], 'closing is no failure');
  t.equal((await rejection(brain.start(SETUP))).code, 'RELAY_CLOSED');
});

t.test('close() while connecting: start rejects RELAY_CLOSED, and no frame is ever sent', async (t) => {
  const sockets: Socket[] = [];
  const silent = createTcpServer((s) => sockets.push(s));
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  t.teardown(() => {
    for (const s of sockets) s.destroy();
    silent.close();
  });
  const brain = new RelayBrain({ url: `ws://127.0.0.1:${(silent.address() as { port: number }).port}/`, signingSecrets: [SECRET], checkTarget: loopbackOnly });
  const events = recordEvents(brain);
  const starting = brain.start(SETUP);
  await waitFor(() => sockets.length === 1, 5000, 'the TCP connection');
  await brain.close();
  t.equal((await rejection(starting)).code, 'RELAY_CLOSED');
  brain.prompt('hello');
  t.same(events, []);
});
