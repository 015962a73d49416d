/**
 * Load generator for the `kannel` scenario (its own process): the same HTTP send load aimed at either gateway.
 * `kannel`: GET /cgi-bin/sendsms (dlr-mask 31, dlr-url pointing at this process); `ferry`: POST /v1/sms/send.
 * Every message is one segment (GSM-7, every tenth UCS-2), recipients differ. Each `run` sends exactly `count`
 * requests over `connections` keep-alive connections (autocannon), then, for Kannel, waits until every accepted
 * message's final delivery report (type 1, 2 or 16) reached the dlr-url receiver here.
 */
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import { expectFromParent, loadgenConfig, report, runLoadgen } from './ipc.js';
import { LatencyRecorder, type Percentiles } from './stats.js';

const autocannon: any = createRequire(import.meta.url)('autocannon');

export interface HttpSendConfig {
  kannelUrl: string;
  kannelUser: string;
  kannelPassword: string;
  ferryUrl: string;
  /** Basic credentials (base64 of key id:secret). */
  ferryToken: string;
  /** The port of this process's dlr-url receiver (chosen free by the parent). */
  dlrPort: number;
}

export interface HttpRunRequest {
  type: 'run';
  target: 'kannel' | 'ferry';
  count: number;
  connections: number;
  /** Kannel only: how long to wait for the final delivery reports after the last answer. */
  finalTimeoutSeconds: number;
}

export interface HttpRunResult {
  target: 'kannel' | 'ferry';
  offered: number;
  /** 2xx answers (Kannel answers 202 "Accepted for delivery", Ferry 200). */
  accepted: number;
  byStatus: Record<string, number>;
  errors: number;
  /** Seconds from the first request to the last answer. */
  sendSeconds: number;
  latency: Percentiles;
  /** Kannel: seconds from the first request to the last final delivery report, NaN when not all came in time. */
  finalSeconds: number;
  /** Kannel: final delivery reports received in this run, and every report (all types) received. */
  finalReports: number;
  reports: number;
}

const cfg = loadgenConfig<HttpSendConfig>();
const GSM_TEXT = 'Your Ferry code is 482913. It expires in 10 minutes.';
const UCS2_TEXT = 'Ваш код Ferry: 482913. Срок действия 10 минут.';
/** Kannel dlr types that end a message: 1 delivered, 2 failed, 16 refused by the SMSC. */
const FINAL_DLR_TYPES = new Set(['1', '2', '16']);
let next = 0;

const recipient = (i: number): string => '23324' + String(i % 10_000_000).padStart(7, '0');

// The dlr-url receiver: counts reports by type; `finalWaiter` is woken on every final one.
let finalReports = 0;
let reports = 0;
let finalWaiter: (() => void) | undefined;
const dlrServer = createServer((req, res) => {
  reports++;
  const type = new URL(req.url ?? '/', 'http://x').searchParams.get('t') ?? '';
  if (FINAL_DLR_TYPES.has(type)) {
    finalReports++;
    finalWaiter?.();
  }
  res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
});

function kannelPath(i: number): string {
  const ucs2 = i % 10 === 3;
  const dlrUrl = `http://127.0.0.1:${cfg.dlrPort}/dlr?t=%d`;
  const q = new URLSearchParams({
    username: cfg.kannelUser,
    password: cfg.kannelPassword,
    from: 'FerryBench',
    to: recipient(i),
    text: ucs2 ? UCS2_TEXT : GSM_TEXT,
    'dlr-mask': '31',
    'dlr-url': dlrUrl,
  });
  if (ucs2) {
    q.set('coding', '2');
    q.set('charset', 'UTF-8');
  }
  return `/cgi-bin/sendsms?${q.toString()}`;
}

function run(req: HttpRunRequest): Promise<HttpRunResult> {
  const latency = new LatencyRecorder(req.count + 16);
  const kannel = req.target === 'kannel';
  const finalBase = finalReports;
  const reportsBase = reports;
  return new Promise((resolve, reject) => {
    const started = performance.now();
    let lastResponse = started;
    const request = kannel
      ? { method: 'GET', setupRequest: (r: Record<string, unknown>) => ({ ...r, path: kannelPath(next++) }) }
      : {
          method: 'POST',
          path: '/v1/sms/send',
          setupRequest: (r: Record<string, unknown>) => {
            const i = next++;
            return { ...r, body: JSON.stringify({ to: recipient(i), from: 'FerryBench', message: i % 10 === 3 ? UCS2_TEXT : GSM_TEXT }) };
          },
        };
    const instance = autocannon(
      {
        url: kannel ? cfg.kannelUrl : cfg.ferryUrl,
        connections: req.connections,
        amount: req.count,
        timeout: 30,
        headers: kannel ? {} : { authorization: `Basic ${cfg.ferryToken}`, 'content-type': 'application/json' },
        requests: [request],
      },
      async (err: Error | null, result: any) => {
        if (err) return reject(err);
        const byStatus: Record<string, number> = {};
        let accepted = 0;
        for (const [code, s] of Object.entries(result.statusCodeStats ?? {})) {
          byStatus[code] = Number((s as { count: number }).count);
          if (code.startsWith('2')) accepted += byStatus[code];
        }
        const sendSeconds = (lastResponse - started) / 1000;
        let finalSeconds = NaN;
        if (kannel) {
          const deadline = performance.now() + req.finalTimeoutSeconds * 1000;
          while (finalReports - finalBase < accepted && performance.now() < deadline) {
            await new Promise<void>((wake) => {
              const t = setTimeout(wake, 200);
              finalWaiter = () => {
                if (finalReports - finalBase >= accepted) {
                  clearTimeout(t);
                  wake();
                }
              };
            });
          }
          finalWaiter = undefined;
          if (finalReports - finalBase >= accepted) finalSeconds = (performance.now() - started) / 1000;
        }
        resolve({
          target: req.target,
          offered: req.count,
          accepted,
          byStatus,
          errors: Number(result.errors ?? 0),
          sendSeconds,
          latency: latency.summary(),
          finalSeconds,
          finalReports: finalReports - finalBase,
          reports: reports - reportsBase,
        });
      },
    );
    instance.on('response', (_client: unknown, _status: number, _bytes: number, responseTime: number) => {
      lastResponse = performance.now();
      latency.add(responseTime);
    });
  });
}

runLoadgen(async () => {
  await new Promise<void>((resolve, reject) => dlrServer.once('error', reject).listen(cfg.dlrPort, '127.0.0.1', resolve));
  await report({ type: 'ready' });
  for (;;) {
    const m = await expectFromParent('run');
    if ((m as unknown as { exit?: boolean }).exit) break;
    await report({ type: 'run-done', result: await run(m as unknown as HttpRunRequest) });
  }
  dlrServer.close();
});
