import { Command } from 'commander';
import type { ChannelModule } from '../platform/channel-module.js';
import type { CliContext } from './cli-context.js';

/**
 * `ferry sim`: each module's simulators, `ferry sim <name>` (issue 43). The one declared `atSimRoot` (the SMSC
 * simulator, historic) fills the group itself and gives it its description, so `ferry sim --port 2776` runs it.
 */
export function simCommand(modules: readonly ChannelModule[], ctx: CliContext): Command {
  const sim = new Command('sim').description('simulators: run one standalone, or read and script the running daemon’s embedded ones');
  for (const m of modules) {
    for (const s of m.simulators ?? []) {
      if (s.atSimRoot) {
        sim.description(s.description);
        s.cli?.(sim, ctx);
        continue;
      }
      const cmd = new Command(s.name).description(s.description);
      s.cli?.(cmd, ctx);
      sim.addCommand(cmd);
    }
  }
  return sim;
}

/** Adds each module's commands to the program, then `ferry sim` with their simulators. Static: no module is created. */
export function addModuleCommands(program: Command, modules: readonly ChannelModule[], ctx: CliContext): void {
  for (const m of modules) m.cli?.(program, ctx);
  program.addCommand(simCommand(modules, ctx));
}
