/**
 * `npm run bench -- <scenario> [options]`: the benchmark entry point. Each scenario is its own
 * script in this folder, run as a separate process so its figures are not disturbed by this one.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../../src/util/paths.js';

const SCENARIOS: Record<string, { script: string; about: string }> = {
  micro: { script: 'smpp-micro.ts', about: 'SMPP codec ns/PDU and loopback submit/resp pairs/s, Ferry against the smpp package' },
  ledger: { script: 'ledger.ts', about: 'ledger group commit: accepted rows/s (DATABASE_URL selects Postgres, else PGlite)' },
  // End to end: daemon, SMSC simulator and load generator as separate processes on loopback (--help for options).
  smpp: { script: 'smpp.ts', about: 'SMPP binds → Ferry → simulator → receipts: msg/s, latency, CPU per 1,000, RSS' },
  rest: { script: 'rest.ts', about: 'REST /v1/sms/send at concurrency C, then /v1/sms/bulk: req/s, latency, CPU per 1,000' },
  otp: { script: 'otp.ts', about: 'OTP request + verify pairs/s, codes read from the simulator' },
  ratewindows: { script: 'ratewindows.ts', about: 'rate-window takes/s in process: embedded, and Redis when REDIS_URL is set' },
  kannel: { script: 'kannel.ts', about: 'Ferry REST and SMPP against Kannel sendsms in one run (needs Debian kannel): msg/s, ratios, CPU per 1,000' },
  ussd: { script: 'ussd.ts', about: "USSD hops/s and hop latency p50/p99 through Africa's Talking callbacks: a hosted tree, then a loopback webhook app" },
  shortlink: { script: 'shortlink.ts', about: 'short link redirects/s and p99 with click recording on, beside a bare Fastify 302 in the same run' },
  messenger: { script: 'messenger.ts', about: 'messenger /send against its simulator: sends/s accepted, the 80/s limit per second, accepted → read latency' },
  email: { script: 'email.ts', about: 'email: POST /v1/email/bulk accepted msg/s and delivered msg/s to the mail simulator over SMTP (DKIM), CPU per 1,000' },
  outbound: { script: 'outbound.ts', about: 'outbound pipeline: jobs/s enqueued and drained to a loopback HTTP provider, CPU per 1,000 jobs' },
  requestlogs: { script: 'requestlogs.ts', about: 'REST req/s, latency and daemon CPU with request logging on vs off, in one run; every request written' },
  cluster: { script: 'cluster.ts', about: 'SMPP load on a loopback 3+3 Redis Cluster, queueShards=3 vs 1: commands per master (±% of even) and per message, msg/s, CPU per 1,000' },
};

const NESTED_SCENARIOS: Record<string, string> = { 'voice-agent': 'voice/agents/bench.ts' };

/** A scenario's first line comment: what the usage prints. */
function aboutOf(path: string): string {
  const first = /^\/\*\*?\s*\n?\s*\*?\s*(.+)$/m.exec(readFileSync(path, 'utf8'))?.[1] ?? '';
  return first.replace(/\s*\*\/\s*$/, '');
}

/**
 * A product's own scenario: `src/channels/<product>/bench.ts`, named after the product (a product is its folder, so its
 * bench lives there too); its first line comment is what the usage prints.
 */
function productScenarios(): Record<string, { path: string; about: string }> {
  const channels = join(packageRoot, 'src/channels');
  const found: Record<string, { path: string; about: string }> = {};
  for (const name of existsSync(channels) ? readdirSync(channels) : []) {
    const path = join(channels, name, 'bench.ts');
    if (!existsSync(path)) continue;
    found[name] = { path, about: aboutOf(path) };
  }
  // A second scenario of a product lives in a folder of its own: src/channels/voice/agents/bench.ts is voice-agent.
  for (const [scenario, path] of Object.entries(NESTED_SCENARIOS)) {
    const full = join(channels, path);
    if (!existsSync(full)) continue;
    found[scenario] = { path: full, about: aboutOf(full) };
  }
  return found;
}

const [scenario, ...rest] = process.argv.slice(2);
const usage = () => {
  const lines = [
    ...Object.entries(SCENARIOS).filter(([, s]) => existsSync(join(packageRoot, 'scripts/bench', s.script))),
    ...Object.entries(productScenarios()),
  ].map(([name, s]) => `  ${name.padEnd(11)} ${s.about}`);
  return (
    `usage: npm run bench -- <scenario> [options]\n\nscenarios:\n${lines.join('\n')}\n\n` +
    `options: npm run bench -- <scenario> --help. rest, smpp and kannel take --webhooks [--webhook-batch N]\n` +
    `[--preload-events N]: N events put in the webhook event log before the first round, as earlier traffic\n` +
    `would have left them (Postgres only; refused on the embedded backend)\n`
  );
};

if (!scenario || scenario === '--help') {
  process.stdout.write(usage());
  process.exit(scenario ? 0 : 2);
}
const entry = SCENARIOS[scenario];
const script = entry && existsSync(join(packageRoot, 'scripts/bench', entry.script)) ? join(packageRoot, 'scripts/bench', entry.script) : productScenarios()[scenario]?.path;
if (!script) {
  process.stderr.write(`bench: unknown scenario ${scenario}\n\n${usage()}`);
  process.exit(2);
}
const run = spawnSync(process.execPath, ['--import', 'tsx', script, ...rest], { stdio: 'inherit' });
process.exit(run.status ?? 1);
