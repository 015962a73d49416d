/**
 * Load generator for the `otp` scenario (run by scripts/bench/otp.ts as its own process): C workers each looping
 * POST /v1/otp/request (a new phone every time) → wait for the code at the simulator's tap → POST /v1/otp/verify.
 * Bounded by pair count and time; a code that does not arrive within the timeout counts as a failure.
 */
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { expectFromParent, loadgenConfig, report, runLoadgen } from './ipc.js';
import { JsonClient } from './http.js';
import { LatencyRecorder, type Percentiles } from './stats.js';

export interface OtpLoadConfig {
  apiUrl: string;
  token: string;
  tapPort: number;
  concurrency: number;
  warmupPairs: number;
  pairs: number;
  seconds: number;
  codeTimeoutSeconds: number;
}

export interface OtpPhaseResult {
  offered: number;
  /** OTP_SENT answers: an OTP exists and its SMS is in the ledger. */
  requested: number;
  verified: number;
  codesMissing: number;
  /** Failed requests and verifies, by `request|verify HTTP code`. */
  failures: Record<string, number>;
  seconds: number;
  requestLatency: Percentiles;
  codeLatency: Percentiles;
  verifyLatency: Percentiles;
  pairLatency: Percentiles;
}

const cfg = loadgenConfig<OtpLoadConfig>();
const MESSAGE = 'Your Ferry code is {code}. It expires in {amount} {duration}.';
const CODE = /code is ([0-9A-Za-z]+)/;

// Codes by phone: a waiter registered after the OTP request, or the code when it beat the HTTP answer.
const waiters = new Map<string, (code: string) => void>();
const early = new Map<string, string>();

function connectTap(): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port: cfg.tapPort }, () => resolve(socket));
    socket.once('error', reject);
    let buf = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      buf += chunk;
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        const tab = line.indexOf('\t');
        const phone = line.slice(0, tab).replace(/^\+/, '');
        const code = CODE.exec(line.slice(tab + 1))?.[1];
        if (!code) continue;
        const w = waiters.get(phone);
        if (w) {
          waiters.delete(phone);
          w(code);
        } else if (early.size < 100_000) early.set(phone, code);
      }
    });
  });
}

function codeFor(phone: string, timeoutMs: number): Promise<string | null> {
  const e = early.get(phone);
  if (e) {
    early.delete(phone);
    return Promise.resolve(e);
  }
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      waiters.delete(phone);
      resolve(null);
    }, timeoutMs);
    waiters.set(phone, (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

const client = new JsonClient(cfg.apiUrl, { authorization: `Basic ${cfg.token}` }, cfg.concurrency);
const post = (path: string, body: unknown) => client.post(path, body);

let nextPhone = 0;

async function runPairs(count: number, seconds: number, capacity: number): Promise<OtpPhaseResult> {
  const r = {
    offered: 0,
    requested: 0,
    verified: 0,
    codesMissing: 0,
    failures: {} as Record<string, number>,
  };
  const lat = { request: new LatencyRecorder(capacity), code: new LatencyRecorder(capacity), verify: new LatencyRecorder(capacity), pair: new LatencyRecorder(capacity) };
  const start = performance.now();
  const deadline = start + seconds * 1000;
  let last = start;
  const failed = (what: string): void => {
    r.failures[what] = (r.failures[what] ?? 0) + 1;
  };
  const worker = async (): Promise<void> => {
    while (r.offered < count && performance.now() < deadline) {
      r.offered++;
      const phone = '23324' + String(nextPhone++ % 10_000_000).padStart(7, '0');
      const t0 = performance.now();
      let res: { status: number; json: any };
      try {
        res = await post('/v1/otp/request', { phone, from: 'FerryBench', message: MESSAGE });
      } catch (err) {
        failed(`request ${(err as Error).name}`);
        continue;
      }
      const t1 = performance.now();
      lat.request.add(t1 - t0);
      if (res.status !== 200) {
        failed(`request ${res.status} ${res.json?.code ?? ''}`.trim());
        continue;
      }
      r.requested++;
      const id = res.json.data.id as string;
      const to = String(res.json.data.to ?? phone);
      const code = await codeFor(to, cfg.codeTimeoutSeconds * 1000);
      const t2 = performance.now();
      if (code === null) {
        r.codesMissing++;
        continue;
      }
      lat.code.add(t2 - t1);
      try {
        res = await post('/v1/otp/verify', { id, pin: code });
      } catch (err) {
        failed(`verify ${(err as Error).name}`);
        continue;
      }
      const t3 = performance.now();
      last = t3;
      lat.verify.add(t3 - t2);
      if (res.status === 200 && res.json?.data?.verified === true) {
        r.verified++;
        lat.pair.add(t3 - t0);
      } else failed(`verify ${res.status} ${res.json?.code ?? ''}`.trim());
    }
  };
  await Promise.all(Array.from({ length: cfg.concurrency }, worker));
  return {
    ...r,
    seconds: (last - start) / 1000,
    requestLatency: lat.request.summary(),
    codeLatency: lat.code.summary(),
    verifyLatency: lat.verify.summary(),
    pairLatency: lat.pair.summary(),
  };
}

runLoadgen(async () => {
  const tap = await connectTap();
  const warmup = cfg.warmupPairs > 0 ? await runPairs(cfg.warmupPairs, 60, cfg.warmupPairs + 16) : undefined;
  await report({ type: 'warmup-done', requested: warmup?.requested ?? 0, verified: warmup?.verified ?? 0, codesMissing: warmup?.codesMissing ?? 0 });
  await expectFromParent('go');
  const measured = await runPairs(cfg.pairs, cfg.seconds, cfg.pairs + cfg.concurrency + 16);
  await report({ type: 'pairs-done', result: measured });
  // Stay alive until the parent has read this process's CPU time.
  await expectFromParent('exit');
  tap.destroy();
  client.close();
});
