/**
 * `npm run bench -- <scenario> [options]`: the benchmark entry point. Each scenario is its own
 * script in this folder, run as a separate process so its figures are not disturbed by this one.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../../src/util/paths.js';

const SCENARIOS: Record<string, { script: string; about: string }> = {
  micro: { script: 'smpp-micro.ts', about: 'SMPP codec ns/PDU and loopback submit/resp pairs/s, Ferry against the smpp package' },
  ledger: { script: 'ledger.ts', about: 'ledger group commit: accepted rows/s (DATABASE_URL selects Postgres, else PGlite)' },
};
// End-to-end scenarios (daemon + simulator + load generator) arrive with the SMPP gateway and REST channels.
const PLANNED = ['smpp', 'rest', 'otp'];

const [scenario, ...rest] = process.argv.slice(2);
const usage = () => {
  const lines = Object.entries(SCENARIOS)
    .filter(([, s]) => existsSync(join(packageRoot, 'scripts/bench', s.script)))
    .map(([name, s]) => `  ${name.padEnd(8)} ${s.about}`);
  return `usage: npm run bench -- <scenario> [options]\n\nscenarios:\n${lines.join('\n')}\n`;
};

if (!scenario || scenario === '--help') {
  process.stdout.write(usage());
  process.exit(scenario ? 0 : 2);
}
const entry = SCENARIOS[scenario];
if (!entry || !existsSync(join(packageRoot, 'scripts/bench', entry.script))) {
  const why = PLANNED.includes(scenario) ? `the ${scenario} scenario needs the end-to-end message path, which is not built yet` : `unknown scenario ${scenario}`;
  process.stderr.write(`bench: ${why}\n\n${usage()}`);
  process.exit(2);
}
const run = spawnSync(process.execPath, ['--import', 'tsx', join(packageRoot, 'scripts/bench', entry.script), ...rest], { stdio: 'inherit' });
process.exit(run.status ?? 1);
