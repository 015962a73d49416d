/**
 * ApnsClient → ApnsSimulator over HTTP/2 on loopback: notifications/s for a bounded batch (default 20,000 sends at
 * concurrency 200, at most 30 s). `--split` runs the simulator in a child process (one core each), else both share one.
 *   node --import tsx src/channels/push/bench-apns-loopback.ts [--sends N] [--concurrency C] [--max-seconds S] [--split]
 */
import { fork } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { ApnsClient } from './providers/apns.js';
import type { PushMessage } from './providers/types.js';
import { ApnsSimulator } from '../../sim/push/apns/apns-simulator.js';
import { SIMULATOR_CERT } from '../../sim/push/apns/simulator-tls.js';

const KEY_ID = 'ABCDE12345';
const TEAM_ID = 'TEAM123456';
const BUNDLE_ID = 'com.example.bench';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
}

async function simulatorChild(): Promise<void> {
  const sim = new ApnsSimulator({ recordLimit: 100 });
  await sim.start();
  let cpu = process.cpuUsage();
  let sentBefore = 0;
  process.on('message', (m: { publicKeyPem?: string; go?: boolean; stop?: boolean }) => {
    if (m.publicKeyPem) {
      sim.addKey({ keyId: KEY_ID, teamId: TEAM_ID, bundleId: BUNDLE_ID, publicKeyPem: m.publicKeyPem });
      process.send!({ url: sim.url });
    }
    if (m.go) {
      cpu = process.cpuUsage();
      sentBefore = sim.stats.sent;
      process.send!({ going: true });
    }
    if (m.stop) {
      const used = process.cpuUsage(cpu);
      const s = sim.stats;
      const sent = s.sent - sentBefore;
      const stats = { sent: s.sent, sessionsOpened: s.sessionsOpened, cpuUsPerNotification: Math.round((used.user + used.system) / sent) };
      process.send!({ stats }, () => void sim.stop().then(() => process.exit(0)));
    }
  });
}

async function main(): Promise<void> {
  const sends = arg('sends', 20_000);
  const concurrency = arg('concurrency', 200);
  const maxMs = arg('max-seconds', 30) * 1000;
  const split = process.argv.includes('--split');
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const publicKeyPem = publicKey.export({ format: 'pem', type: 'spki' }).toString();
  let url: string;
  let go: () => Promise<void> = async () => {};
  let finish: () => Promise<Record<string, number>>;
  if (split) {
    const child = fork(fileURLToPath(import.meta.url), ['--child'], { execArgv: process.execArgv });
    url = await new Promise<string>((resolve) => {
      child.once('message', (m: { url: string }) => resolve(m.url));
      child.send({ publicKeyPem });
    });
    go = () =>
      new Promise((resolve) => {
        child.once('message', () => resolve());
        child.send({ go: true });
      });
    finish = () =>
      new Promise((resolve) => {
        child.once('message', (m: { stats: Record<string, number> }) => resolve(m.stats));
        child.send({ stop: true });
      });
  } else {
    const sim = new ApnsSimulator({ recordLimit: 100 });
    await sim.start();
    sim.addKey({ keyId: KEY_ID, teamId: TEAM_ID, bundleId: BUNDLE_ID, publicKeyPem });
    url = sim.url;
    finish = async () => {
      const s = sim.stats;
      await sim.stop();
      return { sent: s.sent, sessionsOpened: s.sessionsOpened };
    };
  }
  const client = new ApnsClient({
    key: { keyId: KEY_ID, teamId: TEAM_ID, bundleId: BUNDLE_ID, environment: 'production', privateKey: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString() },
    environment: 'production',
    baseUrl: url,
    ca: SIMULATOR_CERT,
  });
  const message = (i: number): PushMessage => ({
    token: i.toString(16).padStart(64, '0'),
    platform: 'ios',
    priority: 'high',
    notification: { title: 'Bench', body: `notification ${i}` },
    data: { orderId: String(i) },
  });
  await client.send(message(0)); // the session and the token, outside the timing
  await go();
  const outcomes: Record<string, number> = {};
  let next = 1;
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  const deadline = started + maxMs;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next <= sends && performance.now() < deadline) {
        const r = await client.send(message(next++));
        const k = r.kind === 'sent' ? 'sent' : `${r.kind}:${r.code}`;
        outcomes[k] = (outcomes[k] ?? 0) + 1;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  await client.close();
  const simStats = await finish();
  const done = Object.values(outcomes).reduce((a, b) => a + b, 0);
  process.stdout.write(
    `${split ? 'split (simulator in a child process)' : 'one process'}: ${done} sends at concurrency ${concurrency} in ${seconds.toFixed(2)} s = ` +
      `${Math.round(done / seconds)} notifications/s; ${split ? 'client' : 'client and simulator'} CPU ${((cpu.user + cpu.system) / 1000 / seconds / 10).toFixed(0)}% of a core, ` +
      `${Math.round((cpu.user + cpu.system) / done)} µs per notification; ` +
      `outcomes ${JSON.stringify(outcomes)}; simulator ${JSON.stringify(simStats)}\n`,
  );
}

if (process.argv.includes('--child')) void simulatorChild();
else void main();
