/**
 * The voice bench's other processes, seen from the bench: the trunk (bench-trunk.ts, forked with --split, else in
 * this process behind the same calls) and the REST load (bench-api-load.ts). Every wait on them is bounded.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { PortRange } from '../../rtp/port-pool.js';
import type { ApiLoadPlan, ApiLoadResult } from './bench-api-load.js';
import { BenchTrunk, type TrunkCpu, type TrunkStepReport } from './bench-trunk.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const ANSWER_LIMIT_MS = 30_000;

/** What the bench asks of the trunk, wherever it runs. */
export interface TrunkSide {
  readonly port: number;
  readonly split: boolean;
  byeAll(): Promise<number>;
  cpuMark(): Promise<void>;
  cpuSince(): Promise<TrunkCpu>;
  report(): Promise<TrunkStepReport>;
  probe(): Promise<{ p99Us: number; maxUs: number; meanUs: number }>;
  stop(): Promise<void>;
}

function withLimit<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms)));
  return Promise.race([p, limit]).finally(() => clearTimeout(timer));
}

export async function startTrunk(o: { split: boolean; mediaPorts: PortRange; farAudio: boolean; maxCallSeconds: number }): Promise<TrunkSide> {
  if (!o.split) {
    const trunk = new BenchTrunk();
    const port = await trunk.start(o);
    return {
      port,
      split: false,
      byeAll: async () => trunk.byeAll(),
      cpuMark: async () => trunk.cpuMark(),
      cpuSince: async () => trunk.cpuSince(),
      report: async () => trunk.report(),
      probe: () => trunk.probe(),
      stop: () => trunk.stop(),
    };
  }
  const child = fork(join(HERE, 'bench-trunk.ts'), ['--bench-trunk-child'], { execArgv: process.execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  let seq = 0;
  child.on('message', (m: { seq: number; value?: unknown; error?: string }) => {
    const w = waiting.get(m.seq);
    waiting.delete(m.seq);
    if (m.error !== undefined) w?.reject(new Error(`trunk: ${m.error}`));
    else w?.resolve(m.value);
  });
  child.once('exit', (code) => {
    for (const w of waiting.values()) w.reject(new Error(`the trunk process exited (${code})`));
    waiting.clear();
  });
  const ask = <T>(request: Record<string, unknown>): Promise<T> => {
    const id = ++seq;
    const answer = new Promise<T>((resolve, reject) => waiting.set(id, { resolve: resolve as (v: unknown) => void, reject }));
    child.send({ ...request, seq: id });
    return withLimit(answer, ANSWER_LIMIT_MS, `trunk ${String(request.op)}`);
  };
  const port = await ask<number>({ op: 'start', mediaPorts: o.mediaPorts, farAudio: o.farAudio, maxCallSeconds: o.maxCallSeconds });
  return {
    port,
    split: true,
    byeAll: () => ask<number>({ op: 'byeAll' }),
    cpuMark: () => ask<void>({ op: 'cpuMark' }),
    cpuSince: () => ask<TrunkCpu>({ op: 'cpuSince' }),
    report: () => ask<TrunkStepReport>({ op: 'report' }),
    probe: () => ask<{ p99Us: number; maxUs: number; meanUs: number }>({ op: 'probe' }),
    stop: async () => {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await ask({ op: 'stop' }).catch(() => child.kill('SIGKILL'));
      await exited;
      clearTimeout(killer);
    },
  };
}

/** A REST load process, started and loaded before its window opens; run() sends the plan and waits for its figures. */
export async function readyApiLoad(): Promise<{ run(plan: ApiLoadPlan): Promise<ApiLoadResult>; kill(): void }> {
  const child: ChildProcess = fork(join(HERE, 'bench-api-load.ts'), ['--bench-api-load-child'], { execArgv: process.execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  await withLimit(new Promise<void>((resolve) => child.once('message', () => resolve())), ANSWER_LIMIT_MS, 'REST load start');
  return {
    run: (plan) => {
      const result = new Promise<ApiLoadResult>((resolve) => child.once('message', (m: ApiLoadResult) => resolve(m)));
      child.send(plan);
      return withLimit(result, (plan.seconds + 30) * 1000, 'REST load').finally(() => child.kill());
    },
    kill: () => child.kill('SIGKILL'),
  };
}
