import { appendFileSync } from 'node:fs';
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
