/**
 * The voice bench's REST load, in a process of its own (its CPU is not the daemon's): GET /v1/voice/calls at a fixed
 * rate for a fixed time, at most 64 requests in flight (a request that would pass that is counted as skipped, not
 * queued: the rate is the load, not a backlog). Forked by bench.ts; says it is ready, then takes its plan as one IPC
 * message (the key never on a command line) and answers with its figures.
 */

export interface ApiLoadPlan {
  url: string;
  token: string;
  ratePerSecond: number;
  seconds: number;
}

export interface ApiLoadResult {
  sent: number;
  ok: number;
  failed: number;
  skipped: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  cpuUs: number;
}

const MAX_IN_FLIGHT = 64;

function percentile(sorted: Float64Array, p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] : NaN;
}

async function run(plan: ApiLoadPlan): Promise<ApiLoadResult> {
  const total = Math.round(plan.ratePerSecond * plan.seconds);
  const latencies = new Float64Array(total);
  let done = 0;
  let ok = 0;
  let failed = 0;
  let skipped = 0;
  let sent = 0;
  let inFlight = 0;
  const headers = { authorization: `Basic ${plan.token}` };
  const target = `${plan.url}/v1/voice/calls?limit=20`;
  const cpu0 = process.cpuUsage();
  const started = performance.now();
  await new Promise<void>((resolve) => {
    const tick = () => {
      const due = Math.min(total, Math.floor(((performance.now() - started) / 1000) * plan.ratePerSecond));
      for (; sent < due; sent++) {
        if (inFlight >= MAX_IN_FLIGHT) {
          skipped++;
          continue;
        }
        inFlight++;
        const at = performance.now();
        fetch(target, { headers })
          .then(async (res) => {
            await res.arrayBuffer();
            if (res.ok) ok++;
            else failed++;
          })
          .catch(() => failed++)
          .finally(() => {
            inFlight--;
            latencies[done++] = performance.now() - at;
          });
      }
      if (sent >= total) return resolve();
      setTimeout(tick, 2);
    };
    tick();
  });
  // The last answers, bounded.
  for (let i = 0; i < 100 && inFlight > 0; i++) await new Promise((r) => setTimeout(r, 100));
  const cpu = process.cpuUsage(cpu0);
  const sorted = latencies.slice(0, done).sort();
  return { sent: sent - skipped, ok, failed, skipped, p50Ms: percentile(sorted, 0.5), p99Ms: percentile(sorted, 0.99), maxMs: sorted.length ? sorted[sorted.length - 1] : NaN, cpuUs: cpu.user + cpu.system };
}

if (process.argv.includes('--bench-api-load-child') && process.send) {
  // Loaded and ready: the plan comes when the bench's window opens, so this process's start-up is not in it.
  process.send({ ready: true });
  process.once('message', (plan: ApiLoadPlan) => {
    void run(plan).then((result) => process.send!(result, () => process.exit(0)));
  });
}
