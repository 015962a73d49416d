/**
 * The voice bench's trunk: Ferry's VoiceTrunkSimulator with what a bench step needs around it. Each call's receive
 * stats (jitter, loss) from its media session, INVITE → 200 as the trunk saw it, the CPU it used, a BYE for every
 * answered call, and (farAudio) audio sent back on every answered call as a callee's line does, so Ferry's receive path
 * and in-band DTMF detector carry their real load. Run in a process of its own (`--split`, as a real trunk is not on
 * Ferry's CPU: bench.ts forks this file, which then answers requests over IPC) or in the bench's process.
 */
import { generateTone, measurePacing } from '../../rtp/index.js';
import type { PacingSummary } from '../../rtp/pacing-histogram.js';
import type { PortRange } from '../../rtp/port-pool.js';
import { VoiceTrunkSimulator } from '../../sim/voice/trunk-simulator.js';
import { busiestThreads, threadTicks, type ThreadTicks } from './bench-cpu.js';
import { MediaStatsTap } from './bench-media-tap.js';

export interface TrunkSession {
  jitterMs: number;
  lost: number;
  packetsReceived: number;
  outOfOrder: number;
  /** The trunk's own send pacing (its audio back), to tell a busy machine from a late Ferry. */
  pacing: PacingSummary;
}

export interface TrunkStepReport {
  /** Calls that reached the trunk and are over, since the last report. */
  calls: number;
  answered: number;
  states: Record<string, number>;
  /** INVITE received → 200 OK sent, per answered call (ms; the number plan's ring and answer delays included). */
  inviteToOkMs: number[];
  sessions: TrunkSession[];
}

export interface TrunkCpu {
  /** CPU µs of the trunk's process (all its threads) since cpuMark(). */
  cpuUs: number;
  busiest: string;
}

/** The audio a callee's line sends back: quiet enough to be no digit, replayed before the queue runs dry. */
const CLIP_MS = 4000;
const FEED_EVERY_MS = 200;
const PROBE_PORTS: PortRange = { min: 45000, max: 45099 };

export class BenchTrunk {
  private readonly sim = new VoiceTrunkSimulator();
  private readonly reported = new Set<string>();
  private readonly fedUntil = new Map<string, number>();
  private readonly clip = generateTone([300], CLIP_MS, 1000);
  private feeder: NodeJS.Timeout | undefined;
  private tap: MediaStatsTap | undefined;
  private cpu0 = process.cpuUsage();
  private threads0: ThreadTicks[] = [];
  private at0 = performance.now();

  async start(o: { mediaPorts: PortRange; farAudio: boolean; maxCallSeconds: number }): Promise<number> {
    this.tap = MediaStatsTap.forRange(o.mediaPorts);
    // Recordings are not what is measured: a second each keeps 1,000 calls' buffers small.
    await this.sim.start({ host: '127.0.0.1', port: 0, transport: 'udp', mediaPortRange: o.mediaPorts, recordSeconds: 1, recordingBudgetSeconds: 60, historySize: 5000, maxCallSeconds: o.maxCallSeconds });
    if (o.farAudio) this.feeder = setInterval(() => this.feed(), FEED_EVERY_MS);
    return this.sim.port;
  }

  private feed(): void {
    const now = performance.now();
    for (const call of this.sim.calls()) {
      if (call.state !== 'answered') {
        this.fedUntil.delete(call.id);
        continue;
      }
      // Refilled with a second of audio still queued, so the far end never falls silent.
      const queuedUntil = this.fedUntil.get(call.id) ?? 0;
      if (queuedUntil - 1000 > now) continue;
      if (this.sim.play(call.id, this.clip)) this.fedUntil.set(call.id, Math.max(queuedUntil, now) + CLIP_MS);
    }
  }

  /**
   * The machine's own timer quality now: one lone media session's send pacing for 3 s (pacing-probe.ts). What a step's
   * pacing cannot beat, whatever Ferry does: on a shared machine other processes' load shows here first.
   */
  async probe(): Promise<{ p99Us: number; maxUs: number; meanUs: number }> {
    const r = await measurePacing({ sessions: 1, seconds: 3, portRange: PROBE_PORTS });
    return { p99Us: r.pacing.p99Us, maxUs: r.pacing.maxUs, meanUs: r.pacing.meanUs };
  }

  /** Hangs up every answered call from the trunk's side (BYE); how many. */
  byeAll(): number {
    let n = 0;
    for (const call of this.sim.calls()) if (call.state === 'answered' && this.sim.bye(call.id)) n++;
    return n;
  }

  cpuMark(): void {
    this.cpu0 = process.cpuUsage();
    this.threads0 = threadTicks();
    this.at0 = performance.now();
  }

  cpuSince(): TrunkCpu {
    const cpu = process.cpuUsage(this.cpu0);
    return { cpuUs: cpu.user + cpu.system, busiest: busiestThreads(this.threads0, threadTicks(), (performance.now() - this.at0) / 1000) };
  }

  /** The calls settled since the last report, and the media stats of the sessions stopped since. */
  report(): TrunkStepReport {
    const out: TrunkStepReport = { calls: 0, answered: 0, states: {}, inviteToOkMs: [], sessions: [] };
    for (const call of this.sim.calls()) {
      if (this.reported.has(call.id) || call.state === 'ringing' || call.state === 'answered') continue;
      this.reported.add(call.id);
      out.calls++;
      out.states[call.state] = (out.states[call.state] ?? 0) + 1;
      if (call.answeredAt !== null) {
        out.answered++;
        out.inviteToOkMs.push(call.answeredAt - call.startedAt);
      }
    }
    out.sessions = (this.tap?.take() ?? []).map((s) => ({ jitterMs: s.jitterMs, lost: s.lost, packetsReceived: s.packetsReceived, outOfOrder: s.outOfOrder, pacing: s.pacing }));
    return out;
  }

  async stop(): Promise<void> {
    if (this.feeder) clearInterval(this.feeder);
    await this.sim.stop();
  }
}

/** Requests the bench sends the forked trunk; each is answered with { seq, value } or { seq, error }. */
export type TrunkRequest =
  | { seq: number; op: 'start'; mediaPorts: PortRange; farAudio: boolean; maxCallSeconds: number }
  | { seq: number; op: 'byeAll' | 'cpuMark' | 'cpuSince' | 'report' | 'probe' | 'stop' };

async function serve(trunk: BenchTrunk, r: TrunkRequest): Promise<unknown> {
  switch (r.op) {
    case 'start':
      return trunk.start(r);
    case 'byeAll':
      return trunk.byeAll();
    case 'cpuMark':
      return trunk.cpuMark();
    case 'cpuSince':
      return trunk.cpuSince();
    case 'report':
      return trunk.report();
    case 'probe':
      return trunk.probe();
    case 'stop':
      return trunk.stop();
  }
}

if (process.argv.includes('--bench-trunk-child') && process.send) {
  const trunk = new BenchTrunk();
  process.on('message', (r: TrunkRequest) => {
    void serve(trunk, r).then(
      (value) => process.send!({ seq: r.seq, value: value ?? null }, () => (r.op === 'stop' ? process.exit(0) : undefined)),
      (err: unknown) => process.send!({ seq: r.seq, error: err instanceof Error ? err.message : String(err) }),
    );
  });
  // The bench went away without a stop: end with it.
  process.on('disconnect', () => void trunk.stop().finally(() => process.exit(0)));
}
