import { Command } from 'commander';
import { adminCall, adminTarget } from '../admin-client.js';
import { print } from '../output.js';

export function keysCommand(): Command {
  const cmd = new Command('keys').description('manage API keys (through the running daemon’s admin API)');
  const target = () => adminTarget(cmd.parent?.opts().config);

  cmd
    .command('create')
    .description('create a key; prints keyId, secret and the ready Basic token once')
    .requiredOption('--account <name>', 'account name or id')
    .requiredOption('--scopes <list>', 'comma-separated scopes, or all')
    .option('--env <label>', 'environment label (live, test, …)', 'live')
    .option('--name <text>', 'what the key is for')
    .option('--expires-at <iso>', 'expiry time (ISO 8601)')
    .option('--allowed-recipients <list>', 'comma-separated numbers or prefixes ending in *')
    .option('--json', 'print JSON')
    .action(async (o) => {
      const data = await adminCall<Record<string, unknown>>(target(), 'POST', '/admin/keys', {
        account: o.account,
        scopes: o.scopes,
        environment: o.env,
        ...(o.name ? { name: o.name } : {}),
        ...(o.expiresAt ? { expiresAt: o.expiresAt } : {}),
        ...(o.allowedRecipients ? { allowedRecipients: String(o.allowedRecipients).split(',').map((s: string) => s.trim()) } : {}),
      });
      print(data, !!o.json);
    });

  cmd
    .command('list')
    .option('--account <name>', 'only this account’s keys')
    .option('--json', 'print JSON')
    .action(async (o) => print(await adminCall(target(), 'GET', `/admin/keys${o.account ? `?account=${encodeURIComponent(o.account)}` : ''}`), !!o.json));

  cmd
    .command('rotate KEYID')
    .description('new secret; the old one keeps working for the grace period')
    .option('--grace-seconds <n>', 'how long the old secret stays valid (default from config)')
    .option('--json', 'print JSON')
    .action(async (keyId: string, o) =>
      print(
        await adminCall(target(), 'POST', `/admin/keys/${encodeURIComponent(keyId)}/rotate`, o.graceSeconds !== undefined ? { graceSeconds: Number(o.graceSeconds) } : {}),
        !!o.json,
      ),
    );

  cmd
    .command('stats')
    .description('usage of an account’s keys (requests, errors, rate-limit refusals by day and product, last use) and the rate limits in force')
    .requiredOption('--account <name>', 'account name or id')
    .option('--days <n>', 'days back, at most the request log retention')
    .option('--json', 'print JSON')
    .action(async (o) => {
      const path = `/admin/accounts/${encodeURIComponent(o.account)}/keys/stats${o.days ? `?days=${encodeURIComponent(o.days)}` : ''}`;
      const data = await adminCall<KeyStatsView>(target(), 'GET', path);
      if (o.json) return print(data, true);
      process.stdout.write(keyStatsText(data) + '\n');
    });

  cmd
    .command('revoke KEYID')
    .option('--json', 'print JSON')
    .action(async (keyId: string, o) => print(await adminCall(target(), 'POST', `/admin/keys/${encodeURIComponent(keyId)}/revoke`), !!o.json));

  return cmd;
}

interface Counts {
  requests: number;
  errors: number;
  rateLimited: number;
}

interface KeyStatsView {
  since: string;
  keys: Array<Counts & { keyId: string; name: string | null; revoked: boolean; lastUsedAt: string | null; lastUsedFrom: string | null; byDay: Array<Counts & { day: string }>; byProduct: Array<Counts & { product: string }> }>;
  limits: Array<{ scope: string; applies: string; limit: number | null; per: string; refusal: string }>;
}

/** The statistics as tables for people: one block per key, then the rules. */
export function keyStatsText(s: KeyStatsView): string {
  const counts = (c: Counts) => `${String(c.requests).padStart(8)} ${String(c.errors).padStart(7)} ${String(c.rateLimited).padStart(12)}`;
  const out: string[] = [`since ${s.since}`];
  for (const k of s.keys) {
    out.push('', `${k.keyId}${k.name ? ` (${k.name})` : ''}${k.revoked ? ' [revoked]' : ''}`);
    out.push(`  last used ${k.lastUsedAt ?? 'never'}${k.lastUsedFrom ? ` from ${k.lastUsedFrom}` : ''}`);
    out.push(`  ${'total'.padEnd(12)} ${counts(k)}`);
    if (k.byDay.length) out.push(`  ${'day'.padEnd(12)} requests  errors  rate-limited`, ...k.byDay.map((d) => `  ${d.day.padEnd(12)} ${counts(d)}`));
    if (k.byProduct.length) out.push(`  ${'product'.padEnd(12)} requests  errors  rate-limited`, ...k.byProduct.map((p) => `  ${p.product.padEnd(12)} ${counts(p)}`));
  }
  out.push('', 'rate limits in force:');
  for (const l of s.limits) out.push(`  ${l.scope.padEnd(8)} ${l.limit === null ? 'no limit' : `${l.limit} per ${l.per}`}: ${l.applies} (${l.refusal})`);
  return out.join('\n');
}
