import { Command } from 'commander';
import type { CliContext } from '../../../cli/cli-context.js';

export function routesCommand(ctx: CliContext): Command {
  const cmd = new Command('routes').description('routing rules and route switches (through the running daemon’s admin API)');
  const admin = ctx.admin(cmd);

  cmd
    .command('list')
    .description('rules in match order, with any switch and the upstream order in effect')
    .option('--json', 'print JSON')
    .action(async (o) => ctx.print(await admin.call('GET', '/admin/routes'), !!o.json));

  cmd
    .command('switch RULE UPSTREAM')
    .description('send the rule’s traffic to UPSTREAM first (its configured upstreams stay behind as failover); every instance follows')
    .option('--json', 'print JSON')
    .action(async (rule: string, upstream: string, o) =>
      ctx.print(await admin.call('POST', `/admin/routes/${encodeURIComponent(rule)}/switch`, { upstream }), !!o.json),
    );

  cmd
    .command('clear RULE')
    .description('return the rule to its configured upstreams')
    .option('--json', 'print JSON')
    .action(async (rule: string, o) => ctx.print(await admin.call('DELETE', `/admin/routes/${encodeURIComponent(rule)}/switch`), !!o.json));

  return cmd;
}
