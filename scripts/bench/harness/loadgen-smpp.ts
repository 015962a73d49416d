/**
 * Load generator for the `smpp` scenario (run by scripts/bench/smpp.ts as its own process): K transceiver binds
 * to Ferry, each keeping up to W submit_sm outstanding (or a fixed offered rate), receipts matched back to their
 * submits by receipted_message_id. Phases: warm-up (then its receipts), measured submits, measured receipts.
 * Bounded by message count and by time in every phase.
 */
import { performance } from 'node:perf_hooks';
import { bindClient } from '../../../src/smpp/client.js';
import { CommandStatus, statusName } from '../../../src/smpp/constants.js';
import type { Pdu, PduInputOf } from '../../../src/smpp/pdu.js';
import type { Session } from '../../../src/smpp/session.js';
import { encodeText } from '../../../src/smpp/text/encoding.js';
import { expectFromParent, loadgenConfig, report, runLoadgen } from './ipc.js';
import { LatencyRecorder, type Percentiles } from './stats.js';

export interface SmppLoadConfig {
  host: string;
  port: number;
  systemId: string;
  password: string;
  binds: number;
  window: number;
  warmupMessages: number;
  messages: number;
  seconds: number;
  /** Offered msg/s over all binds; 0 = as fast as the windows allow. */
  rate: number;
  /** How long to wait for receipts after the last submit_sm_resp. */
  finalTimeoutSeconds: number;
  /** After the warm-up, report `warmup-done` and wait for the parent's `go` (it waits for the warm-up's webhooks). */
  gated?: boolean;
  /** 'single': one-segment messages only (GSM-7, 10% UCS-2), the shape of an HTTP send; default 'mixed' adds 5% long. */
  mix?: 'mixed' | 'single';
}

export interface SmppPhaseResult {
  offered: number;
  accepted: number;
  /** Refused submits by command_status name (ESME_RTHROTTLED, …) and local errors (timeout, queue full). */
  refused: Record<string, number>;
  final: number;
  receiptStates: Record<string, number>;
  /** Long messages sent as message_payload (3 parts upstream each). */
  long: number;
  ucs2: number;
  /** Seconds from the phase start to the last submit_sm_resp, and to the last receipt. */
  submitSeconds: number;
  finalSeconds: number;
  respLatency: Percentiles;
  receiptLatency: Percentiles;
}

export interface SmppLoadResult {
  warmup: SmppPhaseResult;
  measured: SmppPhaseResult;
  unmatchedReceipts: number;
  duplicateReceipts: number;
  latencySamplesDropped: number;
}

const STATE_NAMES: Record<number, string> = { 1: 'ENROUTE', 2: 'DELIVERED', 3: 'EXPIRED', 4: 'DELETED', 5: 'UNDELIVERABLE', 6: 'ACCEPTED', 7: 'UNKNOWN', 8: 'REJECTED' };

const cfg = loadgenConfig<SmppLoadConfig>();

// Message mix: mostly GSM-7, 10% UCS-2, 5% long (3 parts in GSM-7, sent as message_payload).
const GSM = encodeText('Your Ferry code is 482913. It expires in 10 minutes. Do not share it.');
const UCS2 = encodeText('Ваш код Ferry: 482913. Срок действия 10 минут.');
const LONG_TEXT = ('Ferry benchmark long message, three parts in GSM-7 once split at 153 characters a part. ').repeat(5).slice(0, 420);
const LONG = encodeText(LONG_TEXT);
if (GSM.dataCoding !== 0 || UCS2.dataCoding !== 8 || LONG.dataCoding !== 0) throw new Error('unexpected data_coding in the message mix');

function pduFor(i: number): { pdu: PduInputOf<'submit_sm'>; kind: 'gsm' | 'ucs2' | 'long' } {
  const destination_addr = '23324' + String(i % 10_000_000).padStart(7, '0');
  const base = {
    command: 'submit_sm' as const,
    source_addr_ton: 5,
    source_addr_npi: 0,
    source_addr: 'FerryBench',
    dest_addr_ton: 1,
    dest_addr_npi: 1,
    destination_addr,
    registered_delivery: 1,
  };
  if (i % 20 === 7 && cfg.mix !== 'single') return { kind: 'long', pdu: { ...base, data_coding: 0, tlvs: { message_payload: LONG.bytes } } };
  if (i % 10 === 3) return { kind: 'ucs2', pdu: { ...base, data_coding: 8, short_message: UCS2.bytes } };
  return { kind: 'gsm', pdu: { ...base, data_coding: 0, short_message: GSM.bytes } };
}

class Phase {
  offered = 0;
  accepted = 0;
  final = 0;
  long = 0;
  ucs2 = 0;
  refused: Record<string, number> = {};
  receiptStates: Record<string, number> = {};
  start = 0;
  lastResp = 0;
  lastReceipt = 0;
  readonly resp: LatencyRecorder;
  readonly receipt: LatencyRecorder;
  constructor(capacity: number) {
    this.resp = new LatencyRecorder(capacity);
    this.receipt = new LatencyRecorder(capacity);
  }
  result(): SmppPhaseResult {
    return {
      offered: this.offered,
      accepted: this.accepted,
      refused: this.refused,
      final: this.final,
      receiptStates: this.receiptStates,
      long: this.long,
      ucs2: this.ucs2,
      submitSeconds: (this.lastResp - this.start) / 1000,
      finalSeconds: (Math.max(this.lastReceipt, this.lastResp) - this.start) / 1000,
      respLatency: this.resp.summary(),
      receiptLatency: this.receipt.summary(),
    };
  }
}

// message_id → [phase, submit time]; receipts that beat their response wait in `early`.
const pending = new Map<string, { phase: Phase; t0: number }>();
const early = new Map<string, { t: number; state: number }>();
const finished = new Set<string>();
let unmatched = 0;
let duplicates = 0;
let finishedCap = 200_000;

function onReceipt(pdu: Pdu): void {
  if (pdu.command !== 'deliver_sm' || (pdu.esm_class & 0x3c) !== 0x04) return;
  const id = pdu.tlvs?.receipted_message_id ?? /^id:(\S+)/.exec(pdu.short_message.toString('latin1'))?.[1];
  if (!id) {
    unmatched++;
    return;
  }
  const now = performance.now();
  const state = pdu.tlvs?.message_state ?? 0;
  const p = pending.get(id);
  if (!p) {
    if (finished.has(id)) duplicates++;
    else if (early.size < 100_000) early.set(id, { t: now, state });
    else unmatched++;
    return;
  }
  pending.delete(id);
  settle(p.phase, id, p.t0, now, state);
}

function settle(phase: Phase, id: string, t0: number, t: number, state: number): void {
  phase.final++;
  phase.lastReceipt = Math.max(phase.lastReceipt, t);
  phase.receipt.add(t - t0);
  const name = STATE_NAMES[state] ?? `state_${state}`;
  phase.receiptStates[name] = (phase.receiptStates[name] ?? 0) + 1;
  if (finished.size < finishedCap) finished.add(id);
}

interface Bind {
  session: Session;
  inFlight: number;
}

let next = 0; // message index across phases (varies the recipient)

function submit(bind: Bind, phase: Phase, onDone: () => void): void {
  const { pdu, kind } = pduFor(next++);
  if (kind === 'long') phase.long++;
  else if (kind === 'ucs2') phase.ucs2++;
  phase.offered++;
  bind.inFlight++;
  const t0 = performance.now();
  bind.session.request(pdu).then(
    (resp) => {
      const t = performance.now();
      bind.inFlight--;
      phase.lastResp = t;
      phase.resp.add(t - t0);
      if (resp.command_status === CommandStatus.ESME_ROK && resp.command === 'submit_sm_resp') {
        phase.accepted++;
        const id = resp.message_id;
        const e = early.get(id);
        if (e) {
          early.delete(id);
          settle(phase, id, t0, e.t, e.state);
        } else pending.set(id, { phase, t0 });
      } else {
        const name = statusName(resp.command_status);
        phase.refused[name] = (phase.refused[name] ?? 0) + 1;
      }
      onDone();
    },
    (err: Error) => {
      bind.inFlight--;
      phase.lastResp = performance.now();
      const name = err.name || 'Error';
      phase.refused[name] = (phase.refused[name] ?? 0) + 1;
      onDone();
    },
  );
}

/** Submits up to `count` messages within `seconds`; resolves when every submit is answered. */
function runSubmits(binds: Bind[], phase: Phase, count: number, seconds: number, rate: number): Promise<void> {
  return new Promise((resolve) => {
    phase.start = performance.now();
    phase.lastResp = phase.start;
    const deadline = phase.start + seconds * 1000;
    let stopped = false;
    let outstanding = 0;
    let cursor = 0;
    const maybeDone = (): void => {
      if (stopped && outstanding === 0) resolve();
    };
    const stopIfDone = (): void => {
      if (!stopped && (phase.offered >= count || performance.now() >= deadline)) stopped = true;
    };
    const done = (bind: Bind) => (): void => {
      outstanding--;
      stopIfDone();
      if (!stopped && rate === 0) fill(bind);
      maybeDone();
    };
    const fill = (bind: Bind): void => {
      while (!stopped && bind.inFlight < cfg.window && phase.offered < count) {
        outstanding++;
        submit(bind, phase, done(bind));
      }
      stopIfDone();
    };
    if (rate === 0) {
      for (const b of binds) fill(b);
      const timer = setInterval(() => {
        stopIfDone();
        if (stopped) {
          clearInterval(timer);
          maybeDone();
        }
      }, 50);
      return;
    }
    // Fixed offered rate: every millisecond, issue what is due, round-robin over the binds; a bind's own queue
    // absorbs short bursts (its latency then counts the wait, as a customer would see it).
    const timer = setInterval(() => {
      stopIfDone();
      if (!stopped) {
        const due = Math.min(count, Math.floor(((performance.now() - phase.start) / 1000) * rate)) - phase.offered;
        for (let k = 0; k < due && !stopped; k++) {
          const bind = binds[cursor++ % binds.length];
          outstanding++;
          submit(bind, phase, done(bind));
          if (phase.offered >= count) stopped = true;
        }
      }
      if (stopped) {
        clearInterval(timer);
        maybeDone();
      }
    }, 1);
  });
}

async function waitReceipts(phase: Phase, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (phase.final < phase.accepted && performance.now() < deadline) await new Promise((r) => setTimeout(r, 20));
}

runLoadgen(async () => {
  const capacity = cfg.messages + 16;
  finishedCap = Math.max(finishedCap, cfg.messages + cfg.warmupMessages);
  const binds: Bind[] = [];
  for (let i = 0; i < cfg.binds; i++) {
    const session = await bindClient({
      host: cfg.host,
      port: cfg.port,
      bindType: 'transceiver',
      system_id: cfg.systemId,
      password: cfg.password,
      windowSize: cfg.window,
      maxQueue: Math.max(cfg.window * 4, 200_000),
      responseTimeoutMs: 60_000,
      onRequest: (pdu) => {
        onReceipt(pdu);
        return {};
      },
    });
    binds.push({ session, inFlight: 0 });
  }

  const warm = new Phase(cfg.warmupMessages + 16);
  if (cfg.warmupMessages > 0) {
    await runSubmits(binds, warm, cfg.warmupMessages, Math.max(10, cfg.seconds), 0);
    // The warm-up's receipts are back before the measured phase starts (its backlog would be measured otherwise).
    const waitMs = Math.max(30_000, cfg.finalTimeoutSeconds * 1000);
    await waitReceipts(warm, waitMs);
    if (warm.final < warm.accepted) throw new Error(`warm-up: only ${warm.final} of ${warm.accepted} receipts within ${waitMs / 1000} s`);
  }
  if (cfg.gated) {
    await report({ type: 'warmup-done', accepted: warm.accepted });
    await expectFromParent('go');
  }
  await report({ type: 'measure-start' });
  const measured = new Phase(capacity);
  await runSubmits(binds, measured, cfg.messages, cfg.seconds, cfg.rate);
  await report({ type: 'submitted', offered: measured.offered, accepted: measured.accepted });
  await waitReceipts(measured, cfg.finalTimeoutSeconds * 1000);
  await report({ type: 'measure-end' });

  const result: SmppLoadResult = {
    warmup: warm.result(),
    measured: measured.result(),
    unmatchedReceipts: unmatched + early.size,
    duplicateReceipts: duplicates,
    latencySamplesDropped: measured.resp.dropped + measured.receipt.dropped,
  };
  await report({ type: 'result', result });
  // Stay alive (and bound) until the parent has read this process's CPU time.
  await expectFromParent('exit');
  await Promise.all(binds.map((b) => b.session.unbind(2000).catch(() => b.session.close())));
});
