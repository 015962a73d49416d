import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { bindClient } from '../../src/smpp/client.js';
import { CommandStatus, EsmClass, MessageState } from '../../src/smpp/constants.js';
import { SessionClosedError, SmppBindError, SmppTimeoutError } from '../../src/smpp/errors.js';
import type { Pdu, PduOf } from '../../src/smpp/pdu.js';
import { messageIdVariants, normalizeMessageId, parseReceipt } from '../../src/smpp/receipt.js';
import type { Session } from '../../src/smpp/session.js';
import { startEmbeddedUpstream } from '../../src/sim/smpp/embedded.js';
import { startSimulator, type SimulatorOptions, type SmscSimulator } from '../../src/sim/smpp/simulator.js';
import { decodeText, encodeText } from '../../src/smpp/text/encoding.js';
import { messageParts } from '../../src/smpp/text/udh.js';
import { smpp } from './fixtures/oracle.js';

interface Teardown {
  teardown(fn: () => unknown): void;
}

async function sim(t: Teardown, options: SimulatorOptions = {}): Promise<SmscSimulator> {
  const s = await startSimulator({ seed: 42, ...options });
  t.teardown(() => s.close());
  return s;
}

/** A Ferry transceiver that collects deliver_sm PDUs. */
async function ferryClient(t: Teardown, port: number, extra: Record<string, unknown> = {}): Promise<{ session: Session; delivered: Array<PduOf<'deliver_sm'>> }> {
  const delivered: Array<PduOf<'deliver_sm'>> = [];
  const session = await bindClient({
    host: '127.0.0.1',
    port,
    bindType: 'transceiver',
    system_id: 'ferry',
    password: 'pw',
    onRequest: (pdu: Pdu) => {
      if (pdu.command === 'deliver_sm') delivered.push(pdu);
      return {};
    },
    ...extra,
  });
  t.teardown(() => session.close());
  return { session, delivered };
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

const text = (s: string): { data_coding: number; short_message: Buffer } => {
  const { dataCoding, bytes } = encodeText(s);
  return { data_coding: dataCoding, short_message: bytes };
};

t.test('the smpp npm package binds to the simulator and gets a matching receipt', async (t) => {
  const s = await sim(t, { systemId: 'cust', password: 'secret', receiptDelayMs: 20 });
  const session = smpp.connect({ url: `smpp://127.0.0.1:${s.port}` });
  t.teardown(() => session.destroy());
  session.on('error', () => undefined);
  const receipt = new Promise<Record<string, any>>((resolve) => {
    session.on('deliver_sm', (pdu: Record<string, any>) => {
      session.send(pdu.response());
      resolve(pdu);
    });
  });
  const bindResp = await new Promise<Record<string, any>>((resolve) => session.bind_transceiver({ system_id: 'cust', password: 'secret' }, resolve));
  t.equal(bindResp.command_status, 0);
  const submitResp = await new Promise<Record<string, any>>((resolve) =>
    session.submit_sm({ destination_addr: '447700900123', source_addr: 'Ferry', registered_delivery: 1, short_message: 'Hello from the oracle' }, resolve),
  );
  t.equal(submitResp.command_status, 0);
  t.match(submitResp.message_id, /^[0-9a-f]+$/);
  const dlr = await receipt;
  t.equal(dlr.esm_class & EsmClass.MC_DELIVERY_RECEIPT, EsmClass.MC_DELIVERY_RECEIPT);
  t.equal(dlr.receipted_message_id, submitResp.message_id);
  t.equal(dlr.message_state, MessageState.DELIVERED);
  const parsed = parseReceipt(dlr.short_message.message);
  t.equal(parsed?.id, submitResp.message_id);
  t.equal(parsed?.stat, 'DELIVRD');
  t.equal(s.received()[0].text, 'Hello from the oracle');
  await waitFor(() => s.stats.receiptsAcked === 1);
});

t.test('bind refusals: wrong credentials and refuse mode', async (t) => {
  const s = await sim(t, { systemId: 'ferry', password: 'pw' });
  const bad = await bindClient({ host: '127.0.0.1', port: s.port, bindType: 'transmitter', system_id: 'ferry', password: 'nope' }).catch((e: unknown) => e);
  t.equal((bad as SmppBindError).status, CommandStatus.ESME_RINVPASWD);
  s.setBehaviour({ refuseBinds: CommandStatus.ESME_RBINDFAIL });
  const refused = await bindClient({ host: '127.0.0.1', port: s.port, bindType: 'transmitter', system_id: 'ferry', password: 'pw' }).catch((e: unknown) => e);
  t.equal((refused as SmppBindError).status, CommandStatus.ESME_RBINDFAIL);
  t.equal(s.stats.bindsRefused, 2);
});

t.test('outcome mix, receipts, decimal ids, query_sm and duplicates', async (t) => {
  const s = await sim(t, { outcomes: { DELIVRD: 0.5, UNDELIV: 0.5 }, idFormat: 'dec' });
  const { session, delivered } = await ferryClient(t, s.port);
  const ids: string[] = [];
  for (let i = 0; i < 40; i++) {
    const resp = await session.request({ command: 'submit_sm', destination_addr: '4470', registered_delivery: 1, ...text(`msg ${i % 20}`) });
    t.equal(resp.command_status, 0);
    ids.push((resp as PduOf<'submit_sm_resp'>).message_id);
  }
  t.ok(ids.every((id) => /^[0-9]+$/.test(id)), 'decimal ids');
  t.equal(new Set(ids).size, 40, 'unique ids');
  await waitFor(() => delivered.length === 40);
  const stats = delivered.map((d) => parseReceipt(decodeText(d.short_message, d.data_coding))!.stat);
  t.ok(stats.includes('DELIVRD') && stats.includes('UNDELIV'), 'both outcomes occur');
  t.same(new Set(delivered.map((d) => d.tlvs?.receipted_message_id)), new Set(ids));
  t.equal(s.stats.duplicates, 20, 'second round of 20 identical texts counted as duplicates');
  const q = await session.request({ command: 'query_sm', message_id: ids[0] });
  t.equal(q.command_status, 0);
  t.ok(([MessageState.DELIVERED, MessageState.UNDELIVERABLE] as number[]).includes((q as PduOf<'query_sm_resp'>).message_state));
  const unknown = await session.request({ command: 'query_sm', message_id: 'nope' });
  t.equal(unknown.command_status, CommandStatus.ESME_RQUERYFAIL);
});

t.test('receipt id styles exercise hex/decimal normalisation', async (t) => {
  const s = await sim(t, { receiptIdStyle: 'decimal' });
  const { session, delivered } = await ferryClient(t, s.port);
  const resp = (await session.request({ command: 'submit_sm', destination_addr: '1', registered_delivery: 1, ...text('x') })) as PduOf<'submit_sm_resp'>;
  await waitFor(() => delivered.length === 1);
  const receiptId = delivered[0].tlvs!.receipted_message_id!;
  t.not(receiptId, resp.message_id);
  t.ok(messageIdVariants(receiptId).includes(normalizeMessageId(resp.message_id)));
  s.setBehaviour({ receiptIdStyle: 'padded-upper' });
  const resp2 = (await session.request({ command: 'submit_sm', destination_addr: '1', registered_delivery: 1, ...text('y') })) as PduOf<'submit_sm_resp'>;
  await waitFor(() => delivered.length === 2);
  t.equal(normalizeMessageId(delivered[1].tlvs!.receipted_message_id!), normalizeMessageId(resp2.message_id));
});

t.test('throttling, silence and receipts before the response', async (t) => {
  const s = await sim(t, { throttleRatio: 1 });
  const { session, delivered } = await ferryClient(t, s.port, { responseTimeoutMs: 100 });
  t.equal((await session.request({ command: 'submit_sm', destination_addr: '1' })).command_status, CommandStatus.ESME_RTHROTTLED);
  s.setBehaviour({ throttleRatio: 0, neverRespond: true });
  t.type(await session.request({ command: 'submit_sm', destination_addr: '1' }).catch((e: unknown) => e), SmppTimeoutError);
  s.setBehaviour({ neverRespond: false, receiptsBeforeResponse: true });
  const resp = (await session.request({ command: 'submit_sm', destination_addr: '1', registered_delivery: 1, ...text('early') })) as PduOf<'submit_sm_resp'>;
  t.equal(delivered.length, 1, 'the receipt arrived before the submit_sm_resp');
  t.equal(delivered[0].tlvs?.receipted_message_id, resp.message_id);
  t.equal(s.stats.throttled, 1);
  t.equal(s.stats.unanswered, 1);
});

t.test('disconnect injection: after N submits and on demand', async (t) => {
  const s = await sim(t, { disconnectAfterSubmits: 3 });
  const { session } = await ferryClient(t, s.port);
  t.equal((await session.request({ command: 'submit_sm', destination_addr: '1' })).command_status, 0);
  t.equal((await session.request({ command: 'submit_sm', destination_addr: '2' })).command_status, 0);
  const third = await session.request({ command: 'submit_sm', destination_addr: '3' }).catch((e: unknown) => e);
  t.type(third, SessionClosedError);
  t.equal((third as SessionClosedError).reason, 'peer_closed');
  s.setBehaviour({ disconnectAfterSubmits: 0 });
  const { session: second } = await ferryClient(t, s.port);
  t.equal(s.disconnectAll(), 1);
  await second.waitClosed();
  t.equal(second.closeReason, 'peer_closed');
  t.equal(s.stats.disconnectsInjected, 2);
});

t.test('receipts wait for a receiver of the same system_id', async (t) => {
  const s = await sim(t);
  const tx = await bindClient({ host: '127.0.0.1', port: s.port, bindType: 'transmitter', system_id: 'acme', password: 'x' });
  t.teardown(() => tx.close());
  await tx.request({ command: 'submit_sm', destination_addr: '1', registered_delivery: 1, ...text('for acme') });
  const other = await ferryClient(t, s.port); // system_id 'ferry' must not get acme's receipt
  await waitFor(() => s.stats.receiptsPending === 1);
  t.equal(other.delivered.length, 0);
  const delivered: Pdu[] = [];
  const rx = await bindClient({
    host: '127.0.0.1', port: s.port, bindType: 'receiver', system_id: 'acme', password: 'x',
    onRequest: (p) => {
      delivered.push(p);
    },
  });
  t.teardown(() => rx.close());
  await waitFor(() => delivered.length === 1);
  t.equal(s.stats.receiptsPending, 0);
});

t.test('redeliverReceipts off: a receipt nobody acknowledges is dropped, and query_sm still tells its final state', async (t) => {
  const s = await sim(t, { redeliverReceipts: false, outcomes: { UNDELIV: 1 }, receiptDelayMs: 50 });
  const tx = await bindClient({ host: '127.0.0.1', port: s.port, bindType: 'transmitter', system_id: 'acme', password: 'x' });
  t.teardown(() => tx.close());
  const resp = await tx.request({ command: 'submit_sm', source_addr: 'Acme', destination_addr: '1', registered_delivery: 1, ...text('lost receipt') });
  const id = (resp as PduOf<'submit_sm_resp'>).message_id;
  const before = (await tx.request({ command: 'query_sm', message_id: id, source_addr: 'Acme' })) as PduOf<'query_sm_resp'>;
  t.equal(before.message_state, MessageState.ENROUTE, 'ENROUTE before its receipt is due');
  t.equal(before.final_date, '', 'without a final date');
  await waitFor(() => s.stats.receiptsDropped === 1);
  t.equal(s.stats.receiptsPending, 0, 'not kept for a later bind');
  const delivered: Pdu[] = [];
  const rx = await bindClient({ host: '127.0.0.1', port: s.port, bindType: 'receiver', system_id: 'acme', password: 'x', onRequest: (p) => void delivered.push(p) });
  t.teardown(() => rx.close());
  const after = (await tx.request({ command: 'query_sm', message_id: id, source_addr: 'Acme' })) as PduOf<'query_sm_resp'>;
  t.equal(after.message_state, MessageState.UNDELIVERABLE, 'query_sm answers the final state');
  t.match(after.final_date, /^\d{12}\d{3}[+-]$/, 'with its final date');
  t.equal(delivered.length, 0, 'and the receipt never comes');
  s.setBehaviour({ answerQueries: false });
  const refused = await tx.request({ command: 'query_sm', message_id: id, source_addr: 'Acme' });
  t.equal(refused.command_status, CommandStatus.ESME_RINVCMDID, 'answerQueries off: ESME_RINVCMDID');
});

t.test('MO and USSD injection; long MO arrives in UDH parts', async (t) => {
  const s = await sim(t);
  const { delivered } = await ferryClient(t, s.port);
  const resps = await s.injectMo({ source: '447700', destination: '12345', text: 'Привет! '.repeat(20) });
  t.equal(resps.length, 3);
  t.ok(resps.every((r) => r.command === 'deliver_sm_resp' && r.command_status === 0));
  const joined = delivered.map((d) => {
    const parts = messageParts(d);
    t.equal(parts.concat?.total, 3);
    return decodeText(parts.payload, d.data_coding);
  });
  t.equal(joined.join(''), 'Привет! '.repeat(20));
  await s.injectUssd({ source: '447700', destination: '*123#', text: 'Balance?', op: 2 });
  const ussd = delivered[3];
  t.equal(ussd.service_type, 'USSD');
  t.equal(ussd.tlvs?.ussd_service_op, 2);
  t.equal(s.stats.moSent, 4);
  await t.rejects(s.injectMo({ source: '1', destination: '2', text: 'x', systemId: 'nobody' }));
});

t.test('received() is bounded and decodes text; submit_multi gets one id', async (t) => {
  const s = await sim(t, { maxStored: 5 });
  const { session } = await ferryClient(t, s.port);
  for (let i = 0; i < 8; i++) await session.request({ command: 'submit_sm', destination_addr: String(i), ...text(`n${i}`) });
  const multi = await session.request({
    command: 'submit_multi',
    dest_address: [
      { dest_flag: 1, dest_addr_ton: 1, dest_addr_npi: 1, destination_addr: '111' },
      { dest_flag: 2, dl_name: 'team' },
    ],
    ...text('to many'),
  });
  t.equal(multi.command, 'submit_multi_resp');
  t.equal(multi.command_status, 0);
  const got = s.received();
  t.equal(got.length, 5);
  t.same(got.map((m) => m.text), ['n4', 'n5', 'n6', 'n7', 'to many']);
  t.same(got[4].destinations, ['111', 'team']);
});

t.test('embedded upstream: random credentials, loud warning', async (t) => {
  const warnings: string[] = [];
  const logger = { info: () => undefined, debug: () => undefined, warn: (_o: object, msg?: string) => warnings.push(msg ?? '') };
  const up = await startEmbeddedUpstream({ logger, behaviour: { receiptDelayMs: 0 } });
  t.teardown(() => up.close());
  t.match(warnings.join('\n'), /NOTHING LEAVES THIS MACHINE/);
  t.equal(up.warning, warnings[0]);
  const { session, delivered } = await ferryClient(t, up.port, { system_id: up.systemId, password: up.password });
  await session.request({ command: 'submit_sm', destination_addr: '1', registered_delivery: 1, ...text('first send') });
  await waitFor(() => delivered.length === 1);
  const wrong = await bindClient({ host: '127.0.0.1', port: up.port, bindType: 'transmitter', system_id: up.systemId, password: 'guess' }).catch((e: unknown) => e);
  t.type(wrong, SmppBindError);
});

t.test('ferry sim CLI runs standalone and stops cleanly on SIGTERM', async (t) => {
  const script = fileURLToPath(new URL('./fixtures/run-sim-cli.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', script, '--port', '0', '--receipt-delay-ms', '0', '--stats-interval-ms', '0'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.teardown(() => child.kill('SIGKILL'));
  const lines: Array<Record<string, unknown>> = [];
  let buffered = '';
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('simulator did not start')), 20_000);
    child.stdout.on('data', (d: Buffer) => {
      buffered += d.toString();
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const line = JSON.parse(buffered.slice(0, nl)) as Record<string, unknown>;
        buffered = buffered.slice(nl + 1);
        lines.push(line);
        if (line.msg === 'SMSC simulator listening') {
          clearTimeout(timer);
          resolve(line.port as number);
        }
      }
    });
  });
  t.ok(port > 0);
  const { session, delivered } = await ferryClient(t, port);
  await session.request({ command: 'submit_sm', destination_addr: '1', registered_delivery: 1, ...text('via CLI') });
  await waitFor(() => delivered.length === 1);
  await session.unbind();
  const code = await new Promise<number | null>((resolve) => {
    child.once('exit', (c) => resolve(c));
    child.kill('SIGTERM');
  });
  t.equal(code, 0, 'exits 0 after SIGTERM');
  t.ok(lines.some((l) => l.msg === 'SMSC simulator stopped'));
  t.ok(lines.every((l) => typeof l.level === 'number' && typeof l.time === 'number'), 'JSON log lines from pino');
});
