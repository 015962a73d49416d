import { Command } from 'commander';
import { adminCall, adminTarget } from '../admin-client.js';
import { print } from '../output.js';

export function routesCommand(): Command {
  const cmd = new Command('routes').description('routing rules and route switches (through the running daemon’s admin API)');
  const target = () => adminTarget(cmd.parent?.opts().config);

  cmd
    .command('list')
    .description('rules in match order, with any switch and the upstream order in effect')
    .option('--json', 'print JSON')
    .action(async (o) => print(await adminCall(target(), 'GET', '/admin/routes'), !!o.json));

  cmd
    .command('switch RULE UPSTREAM')
    .description('send the rule’s traffic to UPSTREAM first (its configured upstreams stay behind as failover); every instance follows')
    .option('--json', 'print JSON')
    .action(async (rule: string, upstream: string, o) =>
      print(await adminCall(target(), 'POST', `/admin/routes/${encodeURIComponent(rule)}/switch`, { upstream }), !!o.json),
    );

  cmd
    .command('clear RULE')
    .description('return the rule to its configured upstreams')
    .option('--json', 'print JSON')
    .action(async (rule: string, o) => print(await adminCall(target(), 'DELETE', `/admin/routes/${encodeURIComponent(rule)}/switch`), !!o.json));

  return cmd;
}
