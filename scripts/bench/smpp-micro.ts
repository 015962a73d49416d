/**
 * SMPP micro-benchmark: codec cost per PDU and loopback submit/resp pairs per second, Ferry against the `smpp`
 * npm package, in one run. Server and client share this process in every case, so figures compare like with like.
 *
 *   npx tsx scripts/bench/smpp-micro.ts [--pairs 200000] [--seconds 10] [--window 1000]
 */
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import { bindClient } from '../../src/smpp/client.js';
import { decodePdu, encodePdu } from '../../src/smpp/codec.js';
import type { DeliverSm, PduInput, PduInputOf } from '../../src/smpp/pdu.js';
import { SmppServer } from '../../src/smpp/server.js';
import { startSimulator } from '../../src/sim/smpp/simulator.js';
import { readReceipt } from '../../src/smpp/upstream/receipt-pdu.js';
import { encodeText } from '../../src/smpp/text/encoding.js';

const smpp: any = createRequire(import.meta.url)('smpp');

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
}
const MAX_PAIRS = arg('pairs', 200_000);
const MAX_SECONDS = arg('seconds', 10);
const WINDOW = arg('window', 1000);
const CODEC_ITERATIONS = arg('codec-iterations', 300_000);

const text = encodeText('Your verification code is 482913. It expires in 10 minutes.');
const submitSm: PduInputOf<'submit_sm'> = {
  command: 'submit_sm',
  sequence_number: 12345,
  source_addr_ton: 5,
  source_addr_npi: 0,
  source_addr: 'Ferry',
  dest_addr_ton: 1,
  dest_addr_npi: 1,
  destination_addr: '447700900123',
  registered_delivery: 1,
  data_coding: text.dataCoding,
  short_message: text.bytes,
};
const receipt = Buffer.from('id:1a2b3c4d sub:001 dlvrd:001 submit date:2403050907 done date:2403050908 stat:DELIVRD err:000 text:Your verification c');
const deliverSm: PduInput = {
  command: 'deliver_sm',
  sequence_number: 777,
  source_addr_ton: 1,
  source_addr_npi: 1,
  source_addr: '447700900123',
  dest_addr_ton: 5,
  destination_addr: 'Ferry',
  esm_class: 4,
  data_coding: 0,
  short_message: receipt,
  tlvs: { receipted_message_id: '1a2b3c4d', message_state: 2 },
};

let sink = 0; // keeps results observable so the loops are not optimised away

function timeLoop(iterations: number, fn: () => void): number {
  for (let i = 0; i < Math.min(20_000, iterations); i++) fn(); // warm-up
  const start = performance.now();
  for (let i = 0; i < iterations; i++) fn();
  return ((performance.now() - start) * 1e6) / iterations;
}

function codecFigures(): Array<Record<string, string>> {
  const rows: Array<Record<string, string>> = [];
  for (const pdu of [submitSm, deliverSm]) {
    const bytes = encodePdu(pdu);
    const ferryEncode = timeLoop(CODEC_ITERATIONS, () => (sink += encodePdu(pdu).length));
    const ferryDecode = timeLoop(CODEC_ITERATIONS, () => (sink += decodePdu(bytes).sequence_number));
    const oracleOptions: Record<string, unknown> = { ...pdu, ...(pdu.tlvs ?? {}) };
    delete oracleOptions.command;
    delete oracleOptions.tlvs;
    const smppEncode = timeLoop(CODEC_ITERATIONS / 3, () => (sink += new smpp.PDU(pdu.command, oracleOptions).toBuffer().length));
    const smppDecode = timeLoop(CODEC_ITERATIONS / 3, () => (sink += new smpp.PDU(bytes).sequence_number));
    rows.push({
      pdu: `${pdu.command} (${bytes.length} B)`,
      'ferry encode ns': ferryEncode.toFixed(0),
      'ferry decode ns': ferryDecode.toFixed(0),
      'smpp pkg encode ns': smppEncode.toFixed(0),
      'smpp pkg decode ns': smppDecode.toFixed(0),
    });
  }
  return rows;
}

interface LoopResult {
  pairs: number;
  seconds: number;
  perSecond: number;
}

/** Keeps `window` requests outstanding until MAX_PAIRS are answered or MAX_SECONDS pass. */
function pipeline(window: number, sendOne: (done: () => void) => void): Promise<LoopResult> {
  return new Promise((resolve) => {
    const start = performance.now();
    const deadline = start + MAX_SECONDS * 1000;
    let issued = 0;
    let completed = 0;
    let finished = false;
    const finish = (): void => {
      if (finished) return;
      finished = true;
      const seconds = (performance.now() - start) / 1000;
      resolve({ pairs: completed, seconds, perSecond: completed / seconds });
    };
    const onDone = (): void => {
      completed++;
      if (completed >= MAX_PAIRS || (completed % 1024 === 0 && performance.now() > deadline)) return finish();
      if (issued < MAX_PAIRS) {
        issued++;
        sendOne(onDone);
      } else if (completed >= issued) finish();
    };
    for (; issued < Math.min(window, MAX_PAIRS); issued++) sendOne(onDone);
  });
}

async function ferryAgainst(kind: 'server' | 'simulator'): Promise<LoopResult> {
  let port: number;
  let close: () => Promise<void>;
  if (kind === 'server') {
    const server = new SmppServer({ windowSize: WINDOW, maxIncoming: WINDOW * 2, onRequest: () => ({ message_id: '1a2b3c4d' }) });
    port = (await server.listen(0)).port;
    close = () => server.close();
  } else {
    const sim = await startSimulator({ maxStored: 1000, windowSize: WINDOW });
    port = sim.port;
    close = () => sim.close();
  }
  const session = await bindClient({ host: '127.0.0.1', port, bindType: 'transceiver', system_id: 'bench', password: 'x', windowSize: WINDOW, maxQueue: WINDOW });
  const request: PduInputOf<'submit_sm'> = { ...submitSm, registered_delivery: 0 };
  const result = await pipeline(WINDOW, (done) => {
    session.request(request).then(done, (err: unknown) => {
      console.error('request failed', err);
      done();
    });
  });
  session.close();
  await close();
  return result;
}

async function smppPackage(): Promise<LoopResult> {
  const server = smpp.createServer((session: any) => {
    session.on('error', () => undefined);
    session.on('bind_transceiver', (pdu: any) => session.send(pdu.response()));
    session.on('submit_sm', (pdu: any) => session.send(pdu.response({ message_id: '1a2b3c4d' })));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = server.address().port;
  const session = smpp.connect({ url: `smpp://127.0.0.1:${port}` });
  session.on('error', () => undefined);
  await new Promise<void>((r) => session.bind_transceiver({ system_id: 'bench', password: 'x' }, () => r()));
  session.socket.setNoDelay(true);
  const options: Record<string, unknown> = { ...submitSm, registered_delivery: 0 };
  delete options.command;
  delete options.sequence_number;
  const result = await pipeline(WINDOW, (done) => {
    session.submit_sm({ ...options }, () => done());
  });
  session.destroy();
  await new Promise<void>((r) => server.close(() => r()));
  for (const s of server.sessions) s.destroy();
  return result;
}

async function main(): Promise<void> {
  console.log(`SMPP micro-benchmark — node ${process.version}, window ${WINDOW}, bound ${MAX_PAIRS} pairs / ${MAX_SECONDS} s per loop`);
  console.log('\nCodec (ns per PDU, lower is better)');
  console.table(codecFigures());
  // What Ferry reads out of every upstream receipt, after decoding: the text (the TLVs are absent from many SMSCs' receipts).
  const textOnly = decodePdu(encodePdu({ ...deliverSm, tlvs: {} } as PduInput)) as DeliverSm;
  const receiptNs = timeLoop(CODEC_ITERATIONS, () => (sink += readReceipt(textOnly)!.state));
  console.log(`\nReceipt read from a decoded deliver_sm (text only): ${receiptNs.toFixed(0)} ns`);

  console.log('\nLoopback submit_sm → submit_sm_resp (client and server in this one process)');
  const rows: Array<Record<string, string>> = [];
  for (const [name, run] of [
    ['ferry client → ferry SmppServer', () => ferryAgainst('server')],
    ['ferry client → ferry simulator', () => ferryAgainst('simulator')],
    ['smpp pkg client → smpp pkg server', () => smppPackage()],
  ] as const) {
    const r = await run();
    rows.push({ loop: name, pairs: String(r.pairs), seconds: r.seconds.toFixed(2), 'pairs/s': Math.round(r.perSecond).toLocaleString('en') });
  }
  console.table(rows);
  if (sink === -1) console.log(sink);
}

await main();
