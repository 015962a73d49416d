/**
 * Load generator for the `rest` scenario (run by scripts/bench/rest.ts as its own process): POST /v1/sms/send with
 * autocannon at concurrency C for T seconds (or paced at a fixed overall rate over C connections), capped at a
 * request count; then
 * POST /v1/sms/bulk with N batches of 1,000 items. Every message is one GSM-7 or UCS-2 segment, so the simulator's
 * receipt count tracks the messages. The parent answers `go` between phases, after the previous phase's messages
 * reached their final states.
 */
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import { expectFromParent, loadgenConfig, report, runLoadgen } from './ipc.js';
import { JsonClient } from './http.js';
import { LatencyRecorder, type Percentiles } from './stats.js';

const autocannon: any = createRequire(import.meta.url)('autocannon');

export interface RestLoadConfig {
  apiUrl: string;
  token: string;
  connections: number;
  warmupSeconds: number;
  seconds: number;
  /** Upper bound of measured send requests. */
  maxRequests: number;
  /** Requests per second, paced evenly over the connections; 0 = as fast as the connections go (autocannon). */
  rate: number;
  bulkBatches: number;
  bulkSize: number;
  bulkConcurrency: number;
}

export interface SendPhaseResult {
  /** Requests sent, including those cut off in flight when the phase ended. */
  offered: number;
  accepted: number;
  /**
   * Requests still in flight when autocannon stopped (it drops their connections), an upper bound: Ferry may or may
   * not have accepted them, so the ledger, not this process, has the exact count.
   */
  cutOff: number;
  byStatus: Record<string, number>;
  errors: number;
  timeouts: number;
  seconds: number;
  latency: Percentiles;
}

export interface BulkPhaseResult {
  batches: number;
  items: number;
  accepted: number;
  failedBatches: Record<string, number>;
  /** Items of batches that got no HTTP answer (timeouts, dropped connections): only the ledger knows their fate. */
  unknownItems: number;
  seconds: number;
  latency: Percentiles;
}

const cfg = loadgenConfig<RestLoadConfig>();
const GSM_TEXT = 'Your Ferry code is 482913. It expires in 10 minutes.';
const UCS2_TEXT = 'Ваш код Ferry: 482913. Срок действия 10 минут.';
let next = 0;

function recipient(i: number): string {
  return '23324' + String(i % 10_000_000).padStart(7, '0');
}

function sendBody(): string {
  const i = next++;
  return JSON.stringify({ to: recipient(i), from: 'FerryBench', message: i % 10 === 3 ? UCS2_TEXT : GSM_TEXT });
}

function runSends(seconds: number, maxRequests: number, record: boolean): Promise<SendPhaseResult> {
  const latency = new LatencyRecorder(record ? maxRequests + cfg.connections + 16 : 1);
  return new Promise((resolve, reject) => {
    let responses = 0;
    const started = performance.now();
    let lastResponse = started;
    const instance = autocannon(
      {
        url: cfg.apiUrl,
        connections: cfg.connections,
        duration: seconds,
        timeout: 30,
        headers: { authorization: `Basic ${cfg.token}`, 'content-type': 'application/json' },
        requests: [
          {
            method: 'POST',
            path: '/v1/sms/send',
            setupRequest: (req: Record<string, unknown>) => ({ ...req, body: sendBody() }),
          },
        ],
      },
      (err: Error | null, result: any) => {
        if (err) return reject(err);
        const byStatus: Record<string, number> = {};
        for (const [code, s] of Object.entries(result.statusCodeStats ?? {})) byStatus[code] = Number((s as { count: number }).count);
        const accepted = byStatus['200'] ?? 0;
        const answered = Object.values(byStatus).reduce((a, b) => a + b, 0);
        const errors = Number(result.errors ?? 0);
        // One request in flight per connection at most (no pipelining).
        const cutOff = Math.min(cfg.connections, Math.max(0, Number(result.requests?.sent ?? 0) - answered - errors));
        resolve({
          offered: answered + errors + cutOff,
          accepted,
          cutOff,
          byStatus,
          errors: Number(result.errors ?? 0),
          timeouts: Number(result.timeouts ?? 0),
          seconds: (lastResponse - started) / 1000,
          latency: latency.summary(),
        });
      },
    );
    instance.on('response', (_client: unknown, _status: number, _bytes: number, responseTime: number) => {
      lastResponse = performance.now();
      if (record) latency.add(responseTime);
      if (++responses >= maxRequests) instance.stop();
    });
  });
}

/**
 * A fixed offered rate, paced: every millisecond the requests that are due leave, spread evenly over the second.
 * (autocannon's overallRate lets each connection send its whole quota for the second at once and then wait, so a
 * "rate" run measured the queue of those bursts.) Latency counts from when a request was due, so time spent waiting
 * for a free connection is included rather than hidden (no coordinated omission). Every request is answered or
 * fails before the phase ends: nothing is cut off.
 */
function runPaced(seconds: number, rate: number, maxRequests: number, record: boolean): Promise<SendPhaseResult> {
  const total = Math.max(1, Math.min(maxRequests, Math.floor(seconds * rate)));
  const latency = new LatencyRecorder(record ? total : 1);
  const client = new JsonClient(cfg.apiUrl, { authorization: `Basic ${cfg.token}` }, cfg.connections, 30_000);
  const byStatus: Record<string, number> = {};
  let offered = 0;
  let inFlight = 0;
  let issuing = true;
  let errors = 0;
  let timeouts = 0;
  const started = performance.now();
  let lastResponse = started;
  return new Promise((resolve) => {
    const endIfDone = (): void => {
      if (inFlight > 0 || issuing) return;
      client.close();
      resolve({ offered, accepted: byStatus['200'] ?? 0, cutOff: 0, byStatus, errors, timeouts, seconds: (lastResponse - started) / 1000, latency: latency.summary() });
    };
    const settle = (due: number): void => {
      lastResponse = performance.now();
      if (record) latency.add(lastResponse - due);
      inFlight--;
      endIfDone();
    };
    const fire = (due: number): void => {
      offered++;
      inFlight++;
      client.post('/v1/sms/send', sendBody()).then(
        (res) => {
          byStatus[String(res.status)] = (byStatus[String(res.status)] ?? 0) + 1;
          settle(due);
        },
        (err: Error) => {
          errors++;
          if (err.name === 'TimeoutError') timeouts++;
          settle(due);
        },
      );
    };
    const timer = setInterval(() => {
      const now = performance.now();
      const dueNow = Math.min(total, Math.floor(((now - started) / 1000) * rate) + 1);
      while (offered < dueNow) fire(started + (offered / rate) * 1000);
      // Bounded in time as well as count: the phase ends on time even when the daemon falls behind.
      if (offered >= total || now - started >= seconds * 1000) {
        clearInterval(timer);
        issuing = false;
        endIfDone();
      }
    }, 1);
  });
}

async function runBulk(): Promise<BulkPhaseResult> {
  // Bodies are built before the clock starts: the figure is Ferry's, not JSON.stringify's.
  const bodies: string[] = [];
  for (let b = 0; b < cfg.bulkBatches; b++) {
    const messages = [];
    for (let k = 0; k < cfg.bulkSize; k++) {
      const i = next++;
      messages.push({ to: recipient(i), message: i % 10 === 3 ? UCS2_TEXT : GSM_TEXT });
    }
    bodies.push(JSON.stringify({ from: 'FerryBench', messages }));
  }
  const latency = new LatencyRecorder(cfg.bulkBatches);
  const client = new JsonClient(cfg.apiUrl, { authorization: `Basic ${cfg.token}` }, cfg.bulkConcurrency, 60_000);
  const failed: Record<string, number> = {};
  let accepted = 0;
  let unknownItems = 0;
  let cursor = 0;
  const started = performance.now();
  const worker = async (): Promise<void> => {
    while (cursor < bodies.length) {
      const body = bodies[cursor++];
      const t0 = performance.now();
      try {
        const res = await client.post('/v1/sms/bulk', body);
        const json = (res.json ?? {}) as { success?: boolean; code?: string; data?: { accepted?: number } };
        latency.add(performance.now() - t0);
        if (res.status === 200 && json.success) accepted += json.data?.accepted ?? 0;
        else failed[`${res.status} ${json.code ?? ''}`.trim()] = (failed[`${res.status} ${json.code ?? ''}`.trim()] ?? 0) + 1;
      } catch (err) {
        latency.add(performance.now() - t0);
        const name = (err as Error).name || 'Error';
        failed[name] = (failed[name] ?? 0) + 1;
        unknownItems += cfg.bulkSize;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(cfg.bulkConcurrency, bodies.length)) }, worker));
  client.close();
  return {
    batches: bodies.length,
    items: bodies.length * cfg.bulkSize,
    accepted,
    failedBatches: failed,
    unknownItems,
    seconds: (performance.now() - started) / 1000,
    latency: latency.summary(),
  };
}

runLoadgen(async () => {
  let warmup: SendPhaseResult | undefined;
  // At a fixed rate the warm-up runs paced at that rate too, so the measured phase starts in the steady state it measures.
  if (cfg.warmupSeconds > 0) {
    warmup = cfg.rate > 0 ? await runPaced(cfg.warmupSeconds, cfg.rate, Number.MAX_SAFE_INTEGER, false) : await runSends(cfg.warmupSeconds, Math.max(1000, cfg.maxRequests), false);
  }
  await report({ type: 'warmup-done', accepted: warmup?.accepted ?? 0, cutOff: warmup?.cutOff ?? 0 });
  await expectFromParent('go');
  const sends = cfg.rate > 0 ? await runPaced(cfg.seconds, cfg.rate, cfg.maxRequests, true) : await runSends(cfg.seconds, cfg.maxRequests, true);
  await report({ type: 'sends-done', result: sends });
  if (cfg.bulkBatches > 0) {
    await expectFromParent('go');
    const bulk = await runBulk();
    await report({ type: 'bulk-done', result: bulk });
  }
  // Stay alive until the parent has read this process's CPU time.
  await expectFromParent('exit');
});
