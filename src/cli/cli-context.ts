import type { Command } from 'commander';
import { loadConfig } from '../config/load.js';
import { CHANNEL_MODULES } from '../channels/index.js';
import type { FerryConfig } from '../config/schema.js';
import { CliError, adminCall, adminTarget } from './admin-client.js';
import { addInspectCommands, type InspectSpec } from './commands/inspect.js';
import { print } from './output.js';

/** The running daemon's admin API, as one command reaches it. */
export interface AdminClient {
  /** Calls the admin API; returns `data` of the envelope or throws a CliError (exit code 2) with the server's code and message. */
  call<T = unknown>(method: string, path: string, body?: unknown): Promise<T>;
}

/**
 * What a module's commands use from the CLI (ChannelModule.cli, its simulators' cli): the admin client, the output
 * helpers and the config, each found from the program's --config. Static: nothing here starts the daemon.
 */
export interface CliContext {
  /** The admin API of the running daemon (FERRY_ADMIN_URL / FERRY_ADMIN_TOKEN, else from the config of `cmd`'s program). */
  admin(cmd: Command): AdminClient;
  /** The config the program's --config (or $FERRY_CONFIG) names. */
  config(cmd: Command): FerryConfig;
  /** Prints for people (aligned key: value lines) or for scripts (--json). */
  print(value: unknown, json: boolean): void;
  /** An error the user caused, printed as `ferry: <message>` with exit code 2. */
  error(message: string): Error;
  /** Whether `err` is one of error()'s (already worded for the user). */
  isError(err: unknown): boolean;
  /** Adds `list` and `show ID` over one of the admin API's read-only lists (src/admin/inspect-routes.ts) to `cmd`. */
  inspect(cmd: Command, spec: InspectSpec): Command;
}

/** The program's --config, from wherever a command hangs. */
export function rootConfig(cmd: Command): string | undefined {
  let root = cmd;
  while (root.parent) root = root.parent;
  return root.opts().config as string | undefined;
}

export const CLI_CONTEXT: CliContext = {
  admin(cmd) {
    // Found at the first call (the config is read once per command, and not at all by one that fails before).
    let target: { url: string; token: string } | undefined;
    return { call: (method, path, body) => adminCall((target ??= adminTarget(rootConfig(cmd))), method, path, body) };
  },
  config: (cmd) => loadConfig({ path: rootConfig(cmd) ?? null, modules: CHANNEL_MODULES }).config,
  print,
  error: (message) => new CliError(message),
  isError: (err) => err instanceof CliError,
  inspect: addInspectCommands,
};
