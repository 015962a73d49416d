/**
 * Rate-window takes per second, in process: C callers each awaiting `take`/`takeAll` in a loop, for each case on the
 * embedded implementation and, when REDIS_URL is set, on Redis (one script call per take; the Redis server runs
 * beside this process, so the figure includes its CPU on the same machine). Keys go under a scratch prefix that is
 * deleted afterwards.
 *
 *   npm run bench -- ratewindows [--callers 64] [--seconds 3] [--takes 300000] [--json]
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { MemoryRateWindows } from '../../src/store/local/memory-rate-windows.js';
import { RedisKeys } from '../../src/store/redis/keys.js';
import { RedisRateWindows } from '../../src/store/redis/redis-rate-windows.js';
import { defineScripts } from '../../src/store/redis/scripts.js';
import type { RateWindowResult, RateWindows } from '../../src/store/types.js';
import { Args, UsageError } from './harness/args.js';
import { machineInfo } from './harness/machine.js';
import { fmt, printJson, printTable, type Row } from './harness/report.js';
import { LatencyRecorder } from './harness/stats.js';

const USAGE = `usage: npm run bench -- ratewindows [options]

  --callers C    takes in flight at once (default 64)
  --seconds T    each case runs at most T seconds (default 3)
  --takes N      each case runs at most N takes (default 300000)
  --json         also print the result as one JSON line`;

const args = new Args();
let callers: number, seconds: number, maxTakes: number;
try {
  const unknown = args.unknown(['callers', 'seconds', 'takes', 'json']);
  if (unknown.length) throw new UsageError(`unknown option ${unknown[0]}`);
  callers = args.number('callers', 64, { min: 1, max: 10_000, integer: true });
  seconds = args.number('seconds', 3, { min: 0.1, max: 600 });
  maxTakes = args.number('takes', 300_000, { min: 1, max: 100_000_000, integer: true });
} catch (err) {
  process.stderr.write(`${(err as Error).message}\n\n${USAGE}\n`);
  process.exit(2);
}

interface Case {
  name: string;
  take(w: RateWindows, i: number): Promise<RateWindowResult>;
  /** What share of takes should be allowed (a check that the case measured what it says). */
  expectAllowed: 'all' | 'few';
}

const BIG = { second: 1e9, minute: 1e9, day: 1e9 };
const CASES: Case[] = [
  { name: 'one key, 3 windows, allowed', take: (w) => w.take('account:{acc_bench}', BIG), expectAllowed: 'all' },
  {
    name: 'account + recipient (10,000 numbers), all or nothing',
    take: (w, i) =>
      w.takeAll([
        { key: 'account:{acc_bench}', limits: BIG },
        { key: `recipient:{acc_bench}:23320${String(i % 10_000).padStart(7, '0')}`, limits: { day: 1e9 } },
      ]),
    expectAllowed: 'all',
  },
  { name: 'one key, limit reached (refused)', take: (w) => w.take('endpoint:{acc_bench}:full', { minute: 100, day: 100 }), expectAllowed: 'few' },
];

async function runCase(w: RateWindows, c: Case, seconds: number, maxTakes: number): Promise<{ takes: number; allowed: number; rate: number; latency: ReturnType<LatencyRecorder['summary']> }> {
  const lat = new LatencyRecorder(maxTakes);
  let issued = 0;
  let allowed = 0;
  const start = performance.now();
  const stopAt = start + seconds * 1000;
  const loop = async () => {
    while (issued < maxTakes && performance.now() < stopAt) {
      const i = issued++;
      const t0 = performance.now();
      const r = await c.take(w, i);
      lat.add(performance.now() - t0);
      if (r.allowed) allowed++;
    }
  };
  await Promise.all(Array.from({ length: callers }, loop));
  const secs = (performance.now() - start) / 1000;
  return { takes: issued, allowed, rate: issued / secs, latency: lat.summary() };
}

const backends: { name: string; windows: RateWindows }[] = [{ name: 'embedded', windows: new MemoryRateWindows() }];
const redisUrl = process.env.REDIS_URL || null;
const prefix = `ferrybench:${randomBytes(4).toString('hex')}:`;
let redis: Redis | null = null;
if (redisUrl) {
  // As the daemon connects (src/store/backends.ts): commands of one tick leave in one write.
  redis = new Redis(redisUrl, { lazyConnect: true, enableAutoPipelining: true });
  await redis.connect();
  backends.push({ name: 'redis', windows: new RedisRateWindows(defineScripts(redis), new RedisKeys(prefix)) });
}

const rows: Row[] = [];
const results: Record<string, unknown>[] = [];
let failed = false;
try {
  for (const b of backends) {
    for (const c of CASES) {
      await runCase(b.windows, c, Math.min(0.5, seconds), 20_000); // warm-up: JIT, script load
      const r = await runCase(b.windows, c, seconds, maxTakes);
      const ok = c.expectAllowed === 'all' ? r.allowed === r.takes : r.allowed <= 100;
      if (!ok) failed = true;
      rows.push({
        figure: `${b.name}: ${c.name}`,
        value: `${fmt.rate(r.rate, 'takes/s')}; latency ${fmt.latency(r.latency)}`,
        target: 'before: n/a',
        verdict: ok ? '' : `**${r.allowed} of ${r.takes} allowed**`,
      });
      results.push({ backend: b.name, case: c.name, takes: r.takes, allowed: r.allowed, takesPerSecond: r.rate, latencyMs: r.latency });
    }
  }
} finally {
  if (redis) {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await redis.unlink(...keys);
    } while (cursor !== '0');
    await redis.quit();
  }
}

const machine = machineInfo();
printTable(
  `Ferry bench · ratewindows · ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC`,
  [
    `machine: ${machine.cores} × ${machine.model}, ${machine.memoryGiB} GiB, Node ${machine.node}; ${redisUrl ? 'Redis on this machine' : 'no REDIS_URL: embedded only'}`,
    `command: npm run bench -- ratewindows ${process.argv.slice(2).join(' ')}`.trim(),
    `load: ${callers} callers in one process, each awaiting its take; each case ${seconds} s or ${fmt.int(maxTakes)} takes after a warm-up`,
  ],
  rows,
);
if (args.has('json')) printJson({ scenario: 'ratewindows', date: new Date().toISOString(), machine, options: { callers, seconds, maxTakes }, results });
process.exit(failed ? 1 : 0);
