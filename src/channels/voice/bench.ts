/**
 * Voice: call set-up time, then a ladder of concurrent G.711 calls saying a TTS prompt: RTP pacing, far-end jitter and loss, CPU per call.
 *
 *   npm run bench -- voice [--steps 25,50,100,200] [--seconds 20] [--calls 50] [--cps 50] [--api-rate 100] [--api-step N]
 *                          [--api-only] [--workers 1] [--no-split] [--no-far-audio] [--backend embedded|redis+postgres]
 *
 * A daemon in this process (the embedded backend, or Postgres and Redis from DATABASE_URL and REDIS_URL) with a runtime
 * SIP trunk pointing at Ferry's trunk simulator, which runs in a process of its own by default (--split: a real
 * trunk is not on Ferry's CPU; --no-split puts it in this one). Set-up: --calls calls placed at 10 a second, each
 * saying a word, timed POST accepted → in-progress (the row's answered_at) and INVITE → 200 as Ferry and as the trunk
 * saw it (the trunk's number plan rings 100 ms and answers 200 ms later: that 300 ms is in both). Ladder: for each
 * step, that many calls placed at --cps, each saying a cached espeak-ng prompt in a loop; once all are answered, a
 * window of --seconds during which the trunk sends audio back on every call (--no-far-audio: it stays silent) and,
 * for the step under API load, GET /v1/voice/calls runs at --api-rate from a third process. The trunk then hangs
 * every call up. Per step: Ferry's send pacing (each packet's send time against its 20 ms slot, from the media
 * sessions' final stats), the trunk's receive jitter (RFC 3550) and loss per call, the daemon's CPU per concurrent
 * call, and whether the step is clean: pacing p99 < 5 ms and no gap (no packet lost at the trunk, none sent a whole
 * frame late). The machine's other load during each window is printed beside it.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { CHANNEL_MODULES } from '../index.js';
import { loadConfig } from '../../config/load.js';
import { Daemon } from '../../daemon.js';
import { createLogger } from '../../log.js';
import { PacingHistogram } from '../../rtp/pacing-histogram.js';
import type { MediaSessionStats } from '../../rtp/media-session.js';
import { UserAgent } from '../../sip/user-agent.js';
import { readyApiLoad, startTrunk, type TrunkSide } from './bench-children.js';
import { busiestThreads, cpuPressureMicros, machineBusyCores, machineTicks, threadTicks } from './bench-cpu.js';
import { MediaStatsTap } from './bench-media-tap.js';
import type { ApiLoadResult } from './bench-api-load.js';
import type { TrunkCpu, TrunkStepReport } from './bench-trunk.js';

const argv = process.argv.slice(2);
const flag = (name: string, dflt: number, min: number, max: number) => {
  const i = argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(argv[i + 1]) : dflt;
  if (!Number.isInteger(v) || v < min || v > max) throw new Error(`--${name} must be an integer in ${min}..${max}`);
  return v;
};
if (argv.includes('--help')) {
  process.stdout.write(
    'usage: npm run bench -- voice [--steps 25,50,100,200 (each ≤ 500; 0: no ladder)] [--seconds 20 (≤ 60)] [--calls 50 (set-up calls, 0: none, ≤ 500)]\n' +
      '  [--cps 50 (calls a second while a step ramps, ≤ 200)] [--api-rate 100 (GET/s for the step under API load, 0: none, ≤ 2000)]\n' +
      '  [--api-step N (that step; default the largest clean one)] [--api-only (that step alone)] [--workers 1 (media worker threads, ≤ 4)]\n' +
      '  [--no-split: the trunk simulator in this process] [--no-far-audio: the trunk sends no audio back] [--backend embedded|redis+postgres]\n',
  );
  process.exit(0);
}
const stepsArg = argv.includes('--steps') ? argv[argv.indexOf('--steps') + 1] : '25,50,100,200';
// --steps 0: no ladder (the set-up figures alone).
const STEPS = stepsArg === '0' ? [] : stepsArg.split(',').map(Number);
if (STEPS.length > 8 || STEPS.some((n) => !Number.isInteger(n) || n < 1 || n > 500)) throw new Error('--steps: up to 8 integers in 1..500, comma-separated, or 0 for none');
const SECONDS = flag('seconds', 20, 5, 60);
const SETUP_CALLS = flag('calls', 50, 0, 500);
const CPS = flag('cps', 50, 1, 200);
const API_RATE = flag('api-rate', 100, 0, 2000);
const API_STEP = flag('api-step', 0, 0, 500);
/** Only the step under REST load (at --api-step), for a run kept short; its quiet twin comes from another run. */
const API_ONLY = argv.includes('--api-only');
if (API_ONLY && !(API_STEP && API_RATE)) throw new Error('--api-only needs --api-step N and --api-rate R');
const WORKERS = flag('workers', 1, 1, 4);
const SPLIT = !argv.includes('--no-split');
const FAR_AUDIO = !argv.includes('--no-far-audio');
const backendArg = argv.includes('--backend') ? argv[argv.indexOf('--backend') + 1] : undefined;
const BACKEND = backendArg ?? (process.env.DATABASE_URL && process.env.REDIS_URL ? 'redis+postgres' : 'embedded');
if (BACKEND !== 'embedded' && BACKEND !== 'redis+postgres') throw new Error('--backend must be embedded or redis+postgres');
if (BACKEND === 'redis+postgres' && !(process.env.DATABASE_URL && process.env.REDIS_URL)) throw new Error('--backend redis+postgres needs DATABASE_URL and REDIS_URL');

/** The goal: this many concurrent G.711 calls with TTS prompts, clean, on this machine. */
const GOAL_CALLS = 200;
const IDLE_SECONDS = 3;
const CLEAN_PACING_P99_US = 5000;
/** Pacing histogram buckets from this index up hold sends ≥ 20 ms late (pacing-histogram.ts: 1 ms steps from 10 ms, index 190). */
const FRAME_LATE_BUCKET = 200;
// Port ranges away from the simulator's and the tests' defaults (30000–30999, 43000–43999).
const FERRY_PORTS = { min: 46000, max: 47999 };
const TRUNK_PORTS = { min: 48000, max: 49999 };
const PROMPT = 'Hello from Ferry. This is a benchmark prompt, said in a loop until the call ends. Thank you for listening.';
const FINAL = ['completed', 'busy', 'no-answer', 'failed', 'canceled'];
// The caller ID, one per run: a database kept from an earlier run (Postgres) holds the earlier one for its account.
const FROM = `+23320${String(process.pid % 10_000_000).padStart(7, '0')}`;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (sorted: number[], p: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] : NaN);
const sortNum = (a: number[]) => [...a].sort((x, y) => x - y);
const fmt = (v: number, digits = 0) => (Number.isFinite(v) ? v.toFixed(digits) : 'n/a');

// INVITE → 200 as Ferry's user agent sees it: the bench wraps invite() in this process (the product keeps no such time).
const ferryInviteMs: number[] = [];
const invite = UserAgent.prototype.invite;
UserAgent.prototype.invite = function (this: UserAgent, options: Parameters<UserAgent['invite']>[0]) {
  const at = performance.now();
  const call = invite.call(this, options);
  call.once('answered', () => void (ferryInviteMs.length < 10_000 && ferryInviteMs.push(performance.now() - at)));
  return call;
};
const ferryTap = MediaStatsTap.forRange(FERRY_PORTS);

// The trunk's process loads while the daemon starts.
const trunkStarting = startTrunk({ split: SPLIT, mediaPorts: TRUNK_PORTS, farAudio: FAR_AUDIO, maxCallSeconds: 300 });
trunkStarting.catch(() => undefined);
const dataDir = mkdtempSync(join(tmpdir(), 'ferry-bench-voice-'));
const env: Record<string, string> = {
  FERRY_DATA_DIR: dataDir,
  FERRY_HTTP_PORT: '0',
  FERRY_ADMIN_PORT: '0',
  FERRY_SMPP_PORT: '0',
  FERRY_SHORTLINK_PORT: '0',
  FERRY_LOG_LEVEL: 'warn',
  FERRY_HTTP_RATE_LIMIT_PER_KEY_PER_SECOND: '0',
  FERRY_VOICE_SIMULATOR: 'off',
  FERRY_VOICE_MEDIA_PORT_MIN: String(FERRY_PORTS.min),
  FERRY_VOICE_MEDIA_PORT_MAX: String(FERRY_PORTS.max),
  FERRY_VOICE_MEDIA_WORKERS: String(WORKERS),
  FERRY_VOICE_CALLS_PER_SECOND_PER_ACCOUNT: String(CPS),
  FERRY_VOICE_MAX_CONCURRENT_CALLS_PER_ACCOUNT: '100000',
  ...(BACKEND === 'redis+postgres' ? { DATABASE_URL: process.env.DATABASE_URL!, REDIS_URL: process.env.REDIS_URL!, FERRY_REDIS_KEY_PREFIX: `ferry-bench-${process.pid}:` } : {}),
};
const daemon = await Daemon.start(loadConfig({ env, modules: CHANNEL_MODULES }).config, createLogger('warn'));
const trunk: TrunkSide = await trunkStarting.catch(async (err: unknown) => {
  await daemon.stop();
  rmSync(dataDir, { recursive: true, force: true });
  throw err;
});
const startedIn = process.uptime();

interface Timings {
  setupMs: number[];
  /** POST accepted → initiated: waiting in 'queued' and the dialer's admission (limits, audio, the claim). */
  admitMs: number[];
  ferryInviteMs: number[];
  trunkInviteMs: number[];
  answered: number;
  failed: Record<string, number>;
}
interface StepResult {
  calls: number;
  apiRate: number;
  timings: Timings;
  ferry: MediaSessionStats[];
  trunk: TrunkStepReport;
  daemonCpuUs: number;
  daemonThreads: string;
  trunkCpu: TrunkCpu;
  machineCores: number;
  /** Share of the window during which some task on the machine waited for a CPU (PSI). */
  cpuPressure: number;
  loopDelayP99Ms: number;
  loopDelayMaxMs: number;
  api: ApiLoadResult | null;
}

try {
  const adminToken = readFileSync(join(dataDir, 'admin.token'), 'utf8').trim();
  const admin = async (method: string, path: string, body: unknown) => {
    const res = await fetch(daemon.addresses.admin + path, { method, headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const json = (await res.json()) as { success: boolean; data: Record<string, string>; code: string };
    if (!json.success) throw new Error(`${method} ${path}: ${json.code}`);
    return json.data;
  };
  const name = `voicebench${process.pid}`;
  const account = await admin('POST', '/admin/accounts', { name });
  const key = await admin('POST', '/admin/keys', { account: name, scopes: 'all' });
  await admin('POST', `/admin/accounts/${account.id}/numbers`, { number: FROM });
  await admin('PUT', `/admin/voice/trunks/bench${process.pid}`, { host: '127.0.0.1', port: trunk.port, transport: 'udp', priority: 1, maxCallsPerSecond: 1000, maxConcurrentCalls: 100_000, optionsIntervalSeconds: 0 });

  let numberSeq = 0;
  /** Calls placed `inFlight` POSTs at a time, at most `perSecond` a second; the number plan answers any number ending in 1 (Ghanaian mobile numbers here). */
  const place = async (n: number, script: unknown[], timeLimit: number, perSecond: number): Promise<string[]> => {
    const out: string[] = [];
    const started = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(16, n) }, async () => {
        while (next < n) {
          const i = next++;
          const wait = started + (i * 1000) / perSecond - performance.now();
          if (wait > 0) await sleep(wait);
          const to = `+23324${String(++numberSeq).padStart(6, '0')}1`;
          const res = await fetch(`${daemon.addresses.http}/v1/voice/calls`, {
            method: 'POST',
            headers: { authorization: `Basic ${key.token}`, 'content-type': 'application/json' },
            body: JSON.stringify({ to, from: FROM, script, timeLimit }),
          });
          const json = (await res.json()) as { success: boolean; code: string; message: string; data: { callId: string } };
          if (res.status !== 202) throw new Error(`POST /v1/voice/calls: ${res.status} ${json.code} ${json.message} ${JSON.stringify(json.data)}`);
          out.push(json.data.callId);
        }
      }),
    );
    return out;
  };

  /** Waits (bounded) until every call is answered or over ('answered'), or over ('final'). */
  const waitCalls = async (ids: string[], until: 'answered' | 'final', limitMs: number): Promise<void> => {
    const deadline = performance.now() + limitMs;
    while (performance.now() < deadline) {
      const { rows } = await daemon.db.query<{ answered: string | number; final: string | number; done: string | number }>(
        `SELECT count(*) FILTER (WHERE answered_at IS NOT NULL) AS answered, count(*) FILTER (WHERE status = ANY($2)) AS final,
                count(*) FILTER (WHERE answered_at IS NOT NULL OR status = ANY($2)) AS done FROM voice_calls WHERE id = ANY($1)`,
        [ids, FINAL],
      );
      if (Number(until === 'answered' ? rows[0].done : rows[0].final) >= ids.length) return;
      await sleep(100);
    }
  };

  /** POST accepted (the row's created_at) → in-progress (its answered_at), both the database's clock. */
  const timingsOf = async (ids: string[]): Promise<Timings> => {
    const { rows } = await daemon.db.query<{ status: string; error_code: string | null; setup: string | number | null; admitted: string | number | null }>(
      `SELECT status, error_code, extract(epoch FROM answered_at - created_at) * 1000 AS setup, extract(epoch FROM initiated_at - created_at) * 1000 AS admitted
       FROM voice_calls WHERE id = ANY($1)`,
      [ids],
    );
    const failed: Record<string, number> = {};
    const setupMs: number[] = [];
    const admitMs: number[] = [];
    for (const r of rows) {
      if (r.admitted !== null) admitMs.push(Number(r.admitted));
      if (r.setup !== null) setupMs.push(Number(r.setup));
      else {
        const why = `${r.status}${r.error_code ? ` ${r.error_code}` : ''}`;
        failed[why] = (failed[why] ?? 0) + 1;
      }
    }
    return { setupMs, admitMs, ferryInviteMs: ferryInviteMs.splice(0), trunkInviteMs: [], answered: setupMs.length, failed };
  };

  /** The media stats of every answered call: Ferry's (in this process) and the trunk's, each waited for, bounded. */
  const collect = async (answered: number): Promise<{ ferry: MediaSessionStats[]; trunk: TrunkStepReport }> => {
    const deadline = performance.now() + 15_000;
    while (ferryTap.count < answered && performance.now() < deadline) await sleep(100);
    const report: TrunkStepReport = { calls: 0, answered: 0, states: {}, inviteToOkMs: [], sessions: [] };
    while (performance.now() < deadline) {
      const r = await trunk.report();
      report.calls += r.calls;
      report.answered += r.answered;
      for (const [k, v] of Object.entries(r.states)) report.states[k] = (report.states[k] ?? 0) + v;
      report.inviteToOkMs.push(...r.inviteToOkMs);
      report.sessions.push(...r.sessions);
      if (report.sessions.length >= answered && report.answered >= answered) break;
      await sleep(200);
    }
    return { ferry: ferryTap.take(), trunk: report };
  };

  const storage = BACKEND === 'redis+postgres' ? 'Postgres + Redis' : 'embedded (PGlite, in this process)';
  process.stdout.write(
    `voice bench: ${storage}; trunk simulator ${trunk.split ? 'in its own process' : 'in this process'}${FAR_AUDIO ? ', sending audio back' : ', silent'}; ` +
      `${WORKERS} media worker(s); ${STEPS.length && !API_ONLY ? `steps ${STEPS.join(', ')} × ${SECONDS} s at ${CPS} calls/s` : 'no ladder'}; ` +
      `REST load ${API_RATE && (STEPS.length || API_STEP) ? `${API_RATE} GET/s on ${API_STEP ? `the step of ${API_STEP} calls` : 'the largest clean step'}` : 'none'}; ` +
      `started in ${Math.round(startedIn)} s\n`,
  );

  // Warm-up, outside every figure: the media engine starts with the first call, and both prompts are synthesized and
  // cached (espeak-ng runs once per text; later calls read the cache).
  const warm = await place(1, [{ say: { text: 'Hello.' } }, { say: { text: PROMPT } }], 10, 1);
  await waitCalls(warm, 'answered', 30_000);
  await trunk.byeAll();
  await waitCalls(warm, 'final', 30_000);
  await timingsOf(warm);
  await collect(1);

  // The daemon at rest (no call): what a step's CPU is above. Meanwhile the trunk's process measures the machine's
  // timer quality with one lone media session: the floor under every step's pacing.
  const idle0 = process.cpuUsage();
  const idleAt = performance.now();
  // In this process (--no-split) the probe would count as the daemon's: it runs after.
  const [probeSplit] = await Promise.all([trunk.split ? trunk.probe() : null, sleep(IDLE_SECONDS * 1000)]);
  const idleUsed = process.cpuUsage(idle0);
  const idleCores = (idleUsed.user + idleUsed.system) / 1e6 / ((performance.now() - idleAt) / 1000);
  const probe = probeSplit ?? (await trunk.probe());
  process.stdout.write(
    `daemon at rest (no call, ${IDLE_SECONDS} s): ${Math.round(idleCores * 100)}% of a core; the machine's timers meanwhile (one lone media session in the trunk's process): ` +
      `pacing p99 ${fmt(probe.p99Us / 1000, 2)} ms, max ${fmt(probe.maxUs / 1000, 1)} ms\n`,
  );

  // Set-up time, at a few calls a second: one word, then Ferry hangs up.
  if (SETUP_CALLS > 0) {
    const placed = await place(SETUP_CALLS, [{ say: { text: 'Hello.' } }], 10, Math.min(CPS, 10));
    await waitCalls(placed, 'final', 30_000);
    const t = await timingsOf(placed);
    const c = await collect(t.answered);
    const s = sortNum(t.setupMs);
    const fi = sortNum(t.ferryInviteMs);
    const a = sortNum(t.admitMs);
    const ti = sortNum(c.trunk.inviteToOkMs);
    process.stdout.write(
      `\nset-up, ${SETUP_CALLS} calls at ${Math.min(CPS, 10)}/s: ${t.answered} answered${Object.keys(t.failed).length ? `, not: ${JSON.stringify(t.failed)}` : ''}\n` +
        '| measure | p50 | p99 | max |\n|---|---|---|---|\n' +
        `| POST accepted (created_at) → in-progress (answered_at) | ${fmt(pct(s, 0.5))} ms | ${fmt(pct(s, 0.99))} ms | ${fmt(s[s.length - 1])} ms |\n` +
        `| of which POST accepted → initiated (queued, then admitted by the dialer) | ${fmt(pct(a, 0.5))} ms | ${fmt(pct(a, 0.99))} ms | ${fmt(a[a.length - 1])} ms |\n` +
        `| INVITE → 200, Ferry's user agent | ${fmt(pct(fi, 0.5))} ms | ${fmt(pct(fi, 0.99))} ms | ${fmt(fi[fi.length - 1])} ms |\n` +
        `| INVITE → 200, the trunk (300 ms of it its number plan's ring + answer) | ${fmt(pct(ti, 0.5))} ms | ${fmt(pct(ti, 0.99))} ms | ${fmt(ti[ti.length - 1])} ms |\n`,
    );
  }

  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  const runStep = async (n: number, apiRate: number): Promise<StepResult> => {
    const rampSeconds = Math.ceil(n / CPS) + 2;
    const load = apiRate > 0 ? await readyApiLoad() : null;
    const placed = await place(n, [{ say: { text: PROMPT, loop: 10 } }], rampSeconds + SECONDS + 60, CPS * 2);
    await waitCalls(placed, 'answered', rampSeconds * 1000 + 30_000);
    // The window: every call up (those that failed are counted), CPU read around it.
    const m0 = machineTicks();
    const pressure0 = cpuPressureMicros();
    const threads0 = threadTicks();
    const cpu0 = process.cpuUsage();
    await trunk.cpuMark();
    loopDelay.reset();
    loopDelay.enable();
    const at0 = performance.now();
    const api = load ? load.run({ url: daemon.addresses.http, token: key.token, ratePerSecond: apiRate, seconds: SECONDS }) : null;
    await sleep(SECONDS * 1000);
    const apiResult = api ? await api.catch(() => null) : null;
    const seconds = (performance.now() - at0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const daemonThreads = busiestThreads(threads0, threadTicks(), seconds);
    const trunkCpu = await trunk.cpuSince();
    const machineCores = machineBusyCores(m0, machineTicks(), seconds);
    const cpuPressure = (cpuPressureMicros() - pressure0) / 1e6 / seconds;
    loopDelay.disable();
    await trunk.byeAll();
    await waitCalls(placed, 'final', 30_000);
    const timings = await timingsOf(placed);
    const c = await collect(timings.answered);
    timings.trunkInviteMs = c.trunk.inviteToOkMs;
    await sleep(1000); // the last BYEs and the stopped sessions, before the next step
    return {
      calls: n,
      apiRate,
      timings,
      ferry: c.ferry,
      trunk: c.trunk,
      daemonCpuUs: ((cpu.user + cpu.system) / seconds) * SECONDS,
      daemonThreads,
      trunkCpu: { cpuUs: (trunkCpu.cpuUs / seconds) * SECONDS, busiest: trunkCpu.busiest },
      machineCores,
      cpuPressure,
      loopDelayP99Ms: loopDelay.percentile(99) / 1e6,
      loopDelayMaxMs: loopDelay.max / 1e6,
      api: apiResult,
    };
  };

  const results: StepResult[] = [];
  if (!API_ONLY) for (const n of STEPS) results.push(await runStep(n, 0));
  const verdicts = results.map(verdictOf);
  const cleanSteps = results.filter((_, i) => verdicts[i].clean).map((r) => r.calls);
  const largestClean = cleanSteps.length ? Math.max(...cleanSteps) : 0;
  if (API_RATE > 0 && (STEPS.length || API_STEP)) {
    const step = API_STEP || largestClean || Math.min(...STEPS);
    results.push(await runStep(step, API_RATE));
    verdicts.push(verdictOf(results[results.length - 1]));
  }
  if (results.length) printTable(results, verdicts, idleCores);
  printSummary(results, verdicts, largestClean, idleCores);
  process.stdout.write(`this run: ${Math.round(process.uptime())} s; load average ${loadavg().map((l) => l.toFixed(1)).join(' ')} on ${availableParallelism()} cores\n`);
} finally {
  await daemon.stop();
  await trunk.stop();
  rmSync(dataDir, { recursive: true, force: true });
}

interface Verdict {
  clean: boolean;
  pacing: { p99Us: number; maxUs: number; meanUs: number };
  worstCallP99Us: number;
  frameLate: number;
  sent: number;
  jitterP50Ms: number;
  jitterMaxMs: number;
  trunkPacingP99Us: number;
  lost: number;
  callsWithLoss: number;
  received: number;
  why: string[];
}

function verdictOf(r: StepResult): Verdict {
  const merged = new PacingHistogram();
  let frameLate = 0;
  let sent = 0;
  let worstCallP99Us = 0;
  for (const s of r.ferry) {
    merged.merge(s.pacing);
    for (let b = FRAME_LATE_BUCKET; b < s.pacing.histogram.length; b++) frameLate += s.pacing.histogram[b];
    sent += s.packetsSent;
    worstCallP99Us = Math.max(worstCallP99Us, s.pacing.p99Us);
  }
  const { histogram: _h, ...pacing } = merged.summary();
  const jitters = sortNum(r.trunk.sessions.map((s) => s.jitterMs));
  const lost = r.trunk.sessions.reduce((a, s) => a + Math.max(0, s.lost), 0);
  const callsWithLoss = r.trunk.sessions.filter((s) => s.lost > 0).length;
  const received = r.trunk.sessions.reduce((a, s) => a + s.packetsReceived, 0);
  const trunkPacing = new PacingHistogram();
  for (const s of r.trunk.sessions) trunkPacing.merge(s.pacing);
  const why: string[] = [];
  if (r.timings.answered < r.calls) why.push(`${r.calls - r.timings.answered} not answered`);
  if (pacing.p99Us >= CLEAN_PACING_P99_US) why.push('pacing p99 ≥ 5 ms');
  if (frameLate > 0) why.push(`${frameLate} sends a frame late`);
  if (lost > 0) why.push(`${lost} lost`);
  if (r.ferry.length < r.timings.answered) why.push(`stats of ${r.timings.answered - r.ferry.length} calls missing`);
  return { clean: why.length === 0, pacing, worstCallP99Us, frameLate, sent, jitterP50Ms: pct(jitters, 0.5), jitterMaxMs: jitters[jitters.length - 1] ?? NaN, trunkPacingP99Us: trunkPacing.samples ? trunkPacing.percentile(0.99) : NaN, lost, callsWithLoss, received, why };
}

function printTable(results: StepResult[], verdicts: Verdict[], idleCores: number): void {
  const label = (r: StepResult) => `${r.calls}${r.apiRate ? ` + ${r.apiRate} GET/s` : ''}`;
  process.stdout.write(
    `\nladder: media (${SECONDS} s windows; pacing and jitter over each call's whole life, its ramp included)\n` +
      '| calls | answered | POST → in-progress p50 / p99 | INVITE → 200 p50, Ferry / trunk | pacing p99 / max (worst call p99) | sends ≥ 20 ms late | trunk jitter p50 / max (trunk\'s own pacing p99) | lost (calls) | Ferry sent / trunk got | clean |\n' +
      '|---|---|---|---|---|---|---|---|---|---|\n',
  );
  results.forEach((r, i) => {
    const v = verdicts[i];
    const s = sortNum(r.timings.setupMs);
    process.stdout.write(
      `| ${label(r)} | ${r.timings.answered}${Object.keys(r.timings.failed).length ? ` ${JSON.stringify(r.timings.failed)}` : ''} | ${fmt(pct(s, 0.5))} / ${fmt(pct(s, 0.99))} ms | ` +
        `${fmt(pct(sortNum(r.timings.ferryInviteMs), 0.5))} / ${fmt(pct(sortNum(r.timings.trunkInviteMs), 0.5))} ms | ` +
        `${fmt(v.pacing.p99Us / 1000, 2)} / ${fmt(v.pacing.maxUs / 1000, 1)} ms (${fmt(v.worstCallP99Us / 1000, 2)}) | ${v.frameLate} of ${v.sent} | ` +
        `${fmt(v.jitterP50Ms, 2)} / ${fmt(v.jitterMaxMs, 2)} ms (${fmt(v.trunkPacingP99Us / 1000, 2)} ms) | ${v.lost} (${v.callsWithLoss}) | ${v.sent} / ${v.received} | ${v.clean ? 'yes' : `no: ${v.why.join(', ')}`} |\n`,
    );
  });
  process.stdout.write(
    '\nladder: CPU during each window (% of one core)\n' +
      '| calls | daemon total | daemon per call above rest | busiest daemon threads | daemon main loop delay p99 / max | trunk process (busiest threads) | REST load | machine busy (others) | CPU pressure (some task waiting) |\n' +
      '|---|---|---|---|---|---|---|---|---|\n',
  );
  for (const r of results) {
    const daemonCores = r.daemonCpuUs / 1e6 / SECONDS;
    const trunkCores = r.trunkCpu.cpuUs / 1e6 / SECONDS;
    const apiCores = r.api ? r.api.cpuUs / 1e6 / SECONDS : 0;
    const others = Math.max(0, r.machineCores - daemonCores - (SPLIT ? trunkCores : 0) - apiCores);
    const api = r.api
      ? `${Math.round(r.api.ok / SECONDS)} GET/s ok, p50 / p99 ${fmt(r.api.p50Ms, 1)} / ${fmt(r.api.p99Ms, 1)} ms${r.api.failed || r.api.skipped ? ` (${r.api.failed} failed, ${r.api.skipped} skipped)` : ''}; its CPU ${Math.round(apiCores * 100)}%`
      : r.apiRate
        ? 'failed'
        : '—';
    process.stdout.write(
      `| ${label(r)} | ${Math.round(daemonCores * 100)}% | ${fmt(((daemonCores - idleCores) * 100) / r.calls, 2)}% | ${r.daemonThreads} | ${fmt(r.loopDelayP99Ms, 1)} / ${fmt(r.loopDelayMaxMs, 1)} ms | ` +
        `${SPLIT ? `${Math.round(trunkCores * 100)}% (${r.trunkCpu.busiest})` : 'in the daemon\'s process'} | ${api} | ${Math.round(r.machineCores * 100)}% (${Math.round(others * 100)}%) | ${Math.round(r.cpuPressure * 100)}% |\n`,
    );
  }
}

function printSummary(results: StepResult[], verdicts: Verdict[], largestClean: number, idleCores: number): void {
  const quiet = results.filter((r) => r.apiRate === 0);
  const perCall = quiet.map((r) => (r.daemonCpuUs / 1e6 / SECONDS - idleCores) / r.calls);
  const biggest = quiet[quiet.length - 1];
  const cpuPerCall = perCall[perCall.length - 1];
  const cores = availableParallelism();
  if (biggest) {
    process.stdout.write(
      `\nlargest clean step: ${largestClean || 'none'} concurrent calls; goal ${GOAL_CALLS}: ${fmt(largestClean / GOAL_CALLS, 2)}× the goal\n` +
        `daemon CPU at ${biggest.calls} calls: ${fmt(cpuPerCall * 100, 2)}% of a core per call above rest → ${GOAL_CALLS} calls would need ${fmt((cpuPerCall * GOAL_CALLS + idleCores) * 100)}% ` +
        `of a core (this machine has ${cores} cores = ${cores * 100}%, shared with the trunk${SPLIT ? ' process' : ''} and anything else running)\n`,
    );
  }
  const loaded = results.find((r) => r.apiRate > 0);
  if (loaded) {
    const v = verdicts[results.indexOf(loaded)];
    const base = results.findIndex((r) => r.apiRate === 0 && r.calls === loaded.calls);
    const b = base >= 0 ? verdicts[base] : null;
    process.stdout.write(
      `under REST load (${loaded.apiRate} GET/s) at ${loaded.calls} calls: pacing p99 ${fmt(v.pacing.p99Us / 1000, 2)} ms` +
        (b ? ` (quiet: ${fmt(b.pacing.p99Us / 1000, 2)} ms, ${fmt(v.pacing.p99Us / Math.max(1, b.pacing.p99Us), 2)}×)` : '') +
        `, trunk jitter max ${fmt(v.jitterMaxMs, 2)} ms${b ? ` (quiet: ${fmt(b.jitterMaxMs, 2)} ms)` : ''}; ${v.clean ? 'clean' : `not clean: ${v.why.join(', ')}`}\n`,
    );
  }
}
