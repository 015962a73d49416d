/**
 * CPU as the voice bench reads it on Linux: this process by thread (/proc/self/task, to see whether one thread, the
 * media worker or the main loop, is the one at its limit) and the whole machine (/proc/stat, to say how much of it
 * other processes took while a step ran, and the kernel's CPU pressure: how long some task waited for a core; the
 * bench machine is shared). Elsewhere every figure is empty, never wrong.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** Linux's USER_HZ: /proc counts CPU time in 1/100 s. */
const TICKS_PER_SECOND = 100;

export interface ThreadTicks {
  tid: string;
  name: string;
  ticks: number;
}

function readOr(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

/** utime + stime of each thread of this process, in ticks. */
export function threadTicks(): ThreadTicks[] {
  let tids: string[];
  try {
    tids = readdirSync('/proc/self/task');
  } catch {
    return [];
  }
  const out: ThreadTicks[] = [];
  for (const tid of tids) {
    const stat = readOr(`/proc/self/task/${tid}/stat`);
    // The name is in parentheses and may hold spaces: fields are counted after its closing one.
    const close = stat.lastIndexOf(')');
    if (close < 0) continue;
    const fields = stat.slice(close + 2).split(' ');
    // Node names its threads alike: the main thread is told by its id (the process id).
    const name = tid === String(process.pid) ? 'main' : `${stat.slice(stat.indexOf('(') + 1, close)}#${tid}`;
    out.push({ tid, name, ticks: Number(fields[11]) + Number(fields[12]) });
  }
  return out;
}

/** The busiest threads between two readings, as "name: N% of a core", over `seconds`. */
export function busiestThreads(before: ThreadTicks[], after: ThreadTicks[], seconds: number, top = 3): string {
  const was = new Map(before.map((t) => [t.tid, t.ticks]));
  return after
    .map((t) => ({ name: t.name, share: (t.ticks - (was.get(t.tid) ?? 0)) / TICKS_PER_SECOND / seconds }))
    .sort((a, b) => b.share - a.share)
    .slice(0, top)
    .map((t) => `${t.name} ${Math.round(t.share * 100)}%`)
    .join(', ');
}

export interface MachineTicks {
  busy: number;
  total: number;
}

/** The machine's busy and total ticks over all cores (/proc/stat's first line; iowait counts as idle). */
export function machineTicks(): MachineTicks {
  const line = readOr('/proc/stat').split('\n', 1)[0] ?? '';
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  if (v.length < 5) return { busy: 0, total: 0 };
  const total = v.slice(0, 8).reduce((a, b) => a + (Number.isFinite(b) ? b : 0), 0);
  return { busy: total - v[3] - v[4], total };
}

/** Cores' worth of CPU the machine spent between two readings. */
export function machineBusyCores(before: MachineTicks, after: MachineTicks, seconds: number): number {
  return (after.busy - before.busy) / TICKS_PER_SECOND / seconds;
}

/** µs during which some task waited for a CPU, since boot (/proc/pressure/cpu, PSI; 0 where the kernel has none). */
export function cpuPressureMicros(): number {
  const some = /^some .*total=(\d+)/m.exec(readOr('/proc/pressure/cpu'));
  return some ? Number(some[1]) : 0;
}
