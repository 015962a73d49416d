/**
 * The chat bench's clients, in a process of their own (their CPU is not the daemon's): one socket.io-client per user
 * on /chat-sdk, sends paced over the run, each receiver timing send → receive from the timestamp the message carries.
 * Reads its plan as one JSON line on stdin, prints its report as one JSON line on stdout.
 */
import { createInterface } from 'node:readline';
import { io, type Socket } from 'socket.io-client';

interface Plan {
  url: string;
  users: { userId: string; token: string; channelId: string }[];
  ratePerSecond: number;
  seconds: number;
}

const now = () => performance.timeOrigin + performance.now();

function percentile(sorted: Float64Array, p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

const line = await new Promise<string>((resolve) => createInterface({ input: process.stdin }).once('line', resolve));
const plan = JSON.parse(line) as Plan;

// Latencies in a preallocated array: the receive path allocates nothing per message but the event itself.
const maxSamples = plan.ratePerSecond * plan.seconds * 12;
const latencies = new Float64Array(maxSamples);
let samples = 0;
let received = 0;
let ackFailures = 0;
const ackTimes = new Float64Array(plan.ratePerSecond * plan.seconds + 16);
let acks = 0;

const sockets: Socket[] = [];
await Promise.all(
  plan.users.map(
    (u) =>
      new Promise<void>((resolve, reject) => {
        const s = io(plan.url + '/chat-sdk', { auth: { token: u.token }, transports: ['websocket'], reconnection: false, timeout: 60_000 });
        sockets.push(s);
        s.on('message.new', (payload: { message?: { userId: string | null; text: string }; userId?: string | null; text?: string }) => {
          const m = payload.message ?? payload;
          received++;
          if (m.userId === u.userId) return;
          const sentAt = Number(m.text);
          if (samples < maxSamples && Number.isFinite(sentAt)) latencies[samples++] = now() - sentAt;
        });
        s.once('connect', () => resolve());
        s.once('connect_error', (err) => reject(new Error(`${u.userId}: ${err.message}`)));
      }),
  ),
);
// Let every socket finish joining its rooms before the clock starts; the daemon's CPU is counted from here.
await new Promise((r) => setTimeout(r, 500));
process.stdout.write(JSON.stringify({ connected: sockets.length }) + '\n');

const total = plan.ratePerSecond * plan.seconds;
const started = now();
let sent = 0;
let inFlight = 0;
await new Promise<void>((resolve) => {
  const tick = () => {
    const due = Math.min(total, Math.floor(((now() - started) / 1000) * plan.ratePerSecond));
    for (; sent < due; sent++) {
      const u = plan.users[sent % plan.users.length];
      const s = sockets[sent % sockets.length];
      const at = now();
      inFlight++;
      s.timeout(30_000).emit('message.send', { channelId: u.channelId, text: String(at), clientMsgId: `b${sent}` }, (err: Error | null, ack: { ok: boolean }) => {
        inFlight--;
        if (err || !ack?.ok) ackFailures++;
        else if (acks < ackTimes.length) ackTimes[acks++] = now() - at;
      });
    }
    if (sent >= total) return resolve();
    setTimeout(tick, 2);
  };
  tick();
});
const sendSeconds = (now() - started) / 1000;
// Bounded wait for the last acks and deliveries.
for (let i = 0; i < 300 && inFlight > 0; i++) await new Promise((r) => setTimeout(r, 100));
await new Promise((r) => setTimeout(r, 1000));
const elapsed = (now() - started) / 1000;
for (const s of sockets) s.close();

const lat = latencies.slice(0, samples).sort();
const ackSorted = ackTimes.slice(0, acks).sort();
process.stdout.write(
  JSON.stringify({
    sent,
    sendSeconds,
    elapsed,
    acks,
    ackFailures,
    received,
    receivedByOthers: samples,
    p50: percentile(lat, 50),
    p99: percentile(lat, 99),
    max: lat.length ? lat[lat.length - 1] : NaN,
    ackP50: percentile(ackSorted, 50),
    ackP99: percentile(ackSorted, 99),
  }) + '\n',
);
process.exit(0);
