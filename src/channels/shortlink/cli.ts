import { Command } from 'commander';
import type { CliContext } from '../../cli/cli-context.js';

/** `ferry shortlinks list|show`: short links across accounts, through the running daemon's admin API. */
export function shortlinkCli(program: Command, ctx: CliContext): void {
  program.addCommand(
    ctx.inspect(new Command('shortlinks').alias('shortlink').description('inspect short links'), {
      path: '/admin/shortlinks',
      what: 'short links',
      columns: ['id', 'accountId', 'slug', 'clicks', 'maxClicks', 'url', 'createdAt'],
    }),
  );
}
