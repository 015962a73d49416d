/**
 * The SMSC simulator as `ferry sim` runs it (same module, same JSON log lines and stats), plus a "tap": a loopback
 * TCP port that streams every received message as `destination<TAB>text<LF>`, so the otp load generator can read
 * the codes Ferry sends. `ferry sim` does not log message text; this uses the simulator's public received() /
 * clearReceived(), polled every millisecond.
 *
 *   node --import tsx scripts/bench/harness/sim-tap.ts --port P --tap-port Q [--receipt-delay-ms N] [--stats-interval-ms MS]
 */
import net from 'node:net';
import { pino } from 'pino';
import { serveUntilSignal } from '../../../src/sim/smpp/serve-until-signal.js';
import { startSimulator } from '../../../src/sim/smpp/simulator.js';
import { Args } from './args.js';

const args = new Args();
const logger = pino({ name: 'ferry-sim', level: args.string('log-level', 'info') });
const clients = new Set<net.Socket>();
const tap = net.createServer((socket) => {
  socket.setNoDelay(true);
  clients.add(socket);
  socket.on('close', () => clients.delete(socket));
  socket.on('error', () => socket.destroy());
});
await new Promise<void>((resolve, reject) => {
  tap.once('error', reject);
  tap.listen(args.number('tap-port', 0, { integer: true, min: 0 }), '127.0.0.1', resolve);
});
logger.info({ port: (tap.address() as net.AddressInfo).port }, 'simulator tap listening');

// Started after the tap, so "SMSC simulator listening" means both are ready.
const deliveredRatio = args.number('delivered-ratio', 0.95, { min: 0, max: 1 });
const sim = await startSimulator({
  host: '127.0.0.1',
  port: args.number('port', 0, { integer: true, min: 0 }),
  receiptDelayMs: args.number('receipt-delay-ms', 1000, { integer: true, min: 0 }),
  outcomes: { DELIVRD: deliveredRatio, UNDELIV: 1 - deliveredRatio },
  logger,
});

const poll = setInterval(() => {
  const received = sim.received();
  if (!received.length) return;
  sim.clearReceived();
  if (!clients.size) return;
  let out = '';
  for (const m of received) out += `${m.destinations[0] ?? ''}\t${m.text.replace(/[\t\r\n]/g, ' ')}\n`;
  for (const c of clients) c.write(out);
}, 1);

await serveUntilSignal(sim, logger, args.number('stats-interval-ms', 10_000, { integer: true, min: 0 }));
clearInterval(poll);
for (const c of clients) c.destroy();
tap.close();
await sim.close();
process.exit(0);
