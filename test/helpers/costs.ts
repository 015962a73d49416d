import { appendFileSync, readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { performance } from 'node:perf_hooks';
import { packageRoot } from '../../src/util/paths.js';

/**
 * Where the suite's wall time goes, counted rather than guessed: with FERRY_TEST_COSTS=<file>, every daemon boot,
 * CLI process, database seed and migration a helper performs appends one JSON line (test file, kind, milliseconds).
 * `node scripts/ci/test-costs.mjs <file>` sums them. Without the variable this does nothing.
 */
const target = process.env.FERRY_TEST_COSTS;
const testFile = process.argv[1] ? relative(packageRoot, process.argv[1]) : '?';

export function recordCost(kind: string, ms: number, detail?: string): void {
  if (!target) return;
  appendFileSync(target, JSON.stringify({ file: testFile, kind, ms: Math.round(ms), ...(detail ? { detail } : {}) }) + '\n');
}

/** Runs `fn` and records how long it took under `kind`. */
export async function costed<T>(kind: string, fn: () => Promise<T>, detail?: string): Promise<T> {
  const start = performance.now();
  try {
    return await fn();
  } finally {
    recordCost(kind, performance.now() - start, detail);
  }
}

/**
 * At exit, the test process's own account, for telling CPU from waiting on a shared machine: wall seconds, CPU
 * seconds of the process and of the children it waited for (CLI and daemon processes), and how long its main
 * thread sat runnable but waiting for a core (run-queue wait: time another load took, not time the test needs).
 */
function recordProcess(): void {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const tick = 100; // USER_HZ on Linux
    const [utime, stime, cutime, cstime] = [11, 12, 13, 14].map((i) => Number(fields[i]) / tick);
    const [run, wait] = readFileSync('/proc/self/schedstat', 'utf8').split(' ').map(Number);
    recordCost('process', process.uptime() * 1000, JSON.stringify({ cpu: +(utime + stime).toFixed(2), childCpu: +(cutime + cstime).toFixed(2), mainRun: +(run / 1e9).toFixed(2), mainWait: +(wait / 1e9).toFixed(2) }));
  } catch {
    /* not Linux: no account */
  }
}
if (target) process.on('exit', recordProcess);
