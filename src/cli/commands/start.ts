import { Command } from 'commander';
import { loadConfig } from '../../config/load.js';
import { CHANNEL_MODULES } from '../../channels/index.js';
import { Daemon } from '../../daemon.js';
import { createLogger } from '../../log.js';

export function startCommand(): Command {
  return new Command('start')
    .description('run the daemon in the foreground')
    .option('--role <list>', 'process roles, comma-separated: api, smpp, workers, realtime, media, or all (default: config roles or FERRY_ROLE, else all)')
    .action(async (opts: { role?: string }, cmd: Command) => {
      const { config, source } = loadConfig({ path: cmd.parent?.opts().config ?? null, modules: CHANNEL_MODULES });
      if (opts.role !== undefined) config.roles = opts.role;
      const log = createLogger(config.log.level);
      if (source) log.info({ config: source }, 'configuration loaded');
      const daemon = await Daemon.start(config, log);
      let signals = 0;
      const onSignal = (sig: NodeJS.Signals) => {
        signals += 1;
        if (signals > 1) {
          log.warn({ signal: sig }, 'second signal: exiting without waiting for the drain');
          process.exit(1);
        }
        log.info({ signal: sig }, 'shutting down');
        void daemon.stop().then(() => process.exit(0));
      };
      process.on('SIGTERM', onSignal);
      process.on('SIGINT', onSignal);
    });
}
