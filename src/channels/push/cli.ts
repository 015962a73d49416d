import { Command } from 'commander';
import type { CliContext } from '../../cli/cli-context.js';

/** `ferry push apps|devices list|show`: push apps and devices across accounts, through the running daemon's admin API. */
export function pushCli(program: Command, ctx: CliContext): void {
  const push = new Command('push').description('inspect mobile push apps and devices');
  push.addCommand(
    ctx.inspect(new Command('apps').description('inspect push apps'), {
      path: '/admin/push/apps',
      what: 'push apps',
      columns: ['id', 'accountId', 'name', 'fcmProjectId', 'apnsBundleId', 'paused', 'createdAt'],
    }),
  );
  push.addCommand(
    ctx.inspect(new Command('devices').description('inspect push devices'), {
      path: '/admin/push/devices',
      what: 'push devices',
      columns: ['id', 'accountId', 'appId', 'platform', 'userId', 'status', 'createdAt'],
      statuses: 'active, invalid',
    }),
  );
  program.addCommand(push);
}
