#!/usr/bin/env node
/* global process, console */
// Sums what the test helpers recorded with FERRY_TEST_COSTS=<file> (test/helpers/costs.ts), and, given tap output
// files (--reporter=tap), ranks the test files by wall time beside those costs.
//   node scripts/ci/test-costs.mjs costs.jsonl [run.tap ...]
import { readFileSync } from 'node:fs';

const [costsFile, ...tapFiles] = process.argv.slice(2);
if (!costsFile) {
  console.error('usage: test-costs.mjs COSTS.jsonl [TAP_OUTPUT ...]');
  process.exit(2);
}
const all = readFileSync(costsFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
// `process` lines are each test process's own account (wall, CPU with its children); the rest are helper costs.
const cpu = new Map();
for (const r of all.filter((r) => r.kind === 'process')) {
  const d = JSON.parse(r.detail);
  const c = cpu.get(r.file) ?? { wall: 0, cpu: 0 };
  c.wall += r.ms / 1000;
  c.cpu += d.cpu + d.childCpu;
  cpu.set(r.file, c);
}
const rows = all.filter((r) => r.kind !== 'process');
const byKind = new Map();
const byFile = new Map();
for (const r of rows) {
  const k = byKind.get(r.kind) ?? { n: 0, ms: 0 };
  k.n++;
  k.ms += r.ms;
  byKind.set(r.kind, k);
  const f = byFile.get(r.file) ?? {};
  f[r.kind] = f[r.kind] ?? { n: 0, ms: 0 };
  f[r.kind].n++;
  f[r.kind].ms += r.ms;
  byFile.set(r.file, f);
}
console.log('kind                     count   total s   mean s');
for (const [kind, { n, ms }] of [...byKind].sort((a, b) => b[1].ms - a[1].ms)) {
  console.log(`${kind.padEnd(24)} ${String(n).padStart(5)} ${(ms / 1000).toFixed(1).padStart(9)} ${(ms / n / 1000).toFixed(2).padStart(8)}`);
}

const wall = new Map();
for (const f of tapFiles) {
  for (const m of readFileSync(f, 'utf8').matchAll(/^(?:not )?ok \d+ - (\S+\.test\.ts)(?: # \S+)? # time=([\d.]+)ms/gm)) wall.set(m[1], Number(m[2]));
}
const files = wall.size ? [...wall.keys()] : [...new Set([...byFile.keys(), ...cpu.keys()])];
const total = (f) => wall.get(f) ?? (cpu.get(f)?.wall ?? 0) * 1000;
console.log('\nfile                                                    wall s   CPU s  recorded costs (count × kind: seconds)');
for (const f of files.sort((a, b) => total(b) - total(a))) {
  const costs = Object.entries(byFile.get(f) ?? {})
    .sort((a, b) => b[1].ms - a[1].ms)
    .map(([k, { n, ms }]) => `${n}×${k}: ${(ms / 1000).toFixed(1)}`)
    .join(', ');
  const w = wall.has(f) ? wall.get(f) / 1000 : cpu.get(f)?.wall;
  console.log(`${f.padEnd(55)} ${w !== undefined ? w.toFixed(1).padStart(6) : '     -'} ${cpu.has(f) ? cpu.get(f).cpu.toFixed(1).padStart(7) : '      -'}  ${costs}`);
}
if (cpu.size) {
  const sum = [...cpu.values()].reduce((a, c) => a + c.cpu, 0);
  console.log(`\nCPU of ${cpu.size} test processes with their children: ${sum.toFixed(0)} s (${(sum / 2).toFixed(0)} s of wall time at best on 2 cores)`);
}
if (wall.size) console.log(`\n${wall.size} files, ${([...wall.values()].reduce((a, b) => a + b, 0) / 1000).toFixed(0)} s of file wall time (jobs run side by side, so more than the run's own wall time)`);
