import { Command, InvalidArgumentError } from 'commander';
import { adminCall, adminTarget } from '../admin-client.js';
import { print } from '../output.js';

/** `--since`: an ISO time, or a duration back from now (30m, 6h, 7d). */
export function since(value: string): string {
  const rel = /^([1-9][0-9]{0,5})([smhd])$/.exec(value);
  if (rel) return new Date(Date.now() - Number(rel[1]) * { s: 1e3, m: 60e3, h: 3600e3, d: 86400e3 }[rel[2] as 's' | 'm' | 'h' | 'd']).toISOString();
  const t = Date.parse(value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(t)) throw new InvalidArgumentError('expected an ISO time (2026-11-28T06:00:00Z) or a duration back from now (30m, 6h, 7d)');
  return new Date(t).toISOString();
}

function limit(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 500) throw new InvalidArgumentError('expected 1-500');
  return n;
}

/** Rows as an aligned table of the given columns (times shortened to the second). */
export function table(items: Record<string, unknown>[], columns: string[]): string {
  if (!items.length) return '(none)';
  const cell = (v: unknown): string => {
    if (v === null || v === undefined) return '-';
    if (Array.isArray(v)) return v.join(',');
    const s = String(v);
    return /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/.test(s) ? s.slice(0, 19) + 'Z' : s.length > 60 ? s.slice(0, 59) + '…' : s;
  };
  const rows = [columns.map((c) => c.toUpperCase()), ...items.map((it) => columns.map((c) => cell(it[c])))];
  const widths = columns.map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows.map((r) => r.map((v, i) => (i === r.length - 1 ? v : v.padEnd(widths[i]))).join('  ')).join('\n');
}

export interface InspectSpec {
  /** The admin path of the list; `show` reads `{path}/{id}`. */
  path: string;
  what: string;
  columns: string[];
  /** What --status takes (help text); none: the list has no status. */
  statuses?: string;
  /** No `show` here (the product has one already). */
  noShow?: boolean;
}

/**
 * Adds `list` (filters --account, --status, --since, --limit; a table, or --json) and `show ID` (the item with its
 * history or attempts) to a product's command. Both read through the running daemon's admin API, across accounts.
 */
export function addInspectCommands(cmd: Command, spec: InspectSpec): Command {
  const list = cmd
    .command('list')
    .description(`${spec.what}, newest first, across accounts (through the running daemon’s admin API)`)
    .option('--account <name>', 'only this account’s (name or id)');
  if (spec.statuses) list.option('--status <status>', `only with this status (${spec.statuses})`);
  list
    .option('--since <time>', 'created at or after: an ISO time or a duration back from now (30m, 6h, 7d)', since)
    .option('--limit <n>', 'at most this many (1-500)', limit, 50)
    .option('--json', 'print JSON')
    .action(async (o: { account?: string; status?: string; since?: string; limit: number; json?: boolean }, c: Command) => {
      const q = new URLSearchParams({ limit: String(o.limit) });
      if (o.account) q.set('account', o.account);
      if (o.status) q.set('status', o.status);
      if (o.since) q.set('since', o.since);
      const data = await adminCall<{ items: Record<string, unknown>[] }>(adminTarget(c.optsWithGlobals().config), 'GET', `${spec.path}?${q}`);
      if (o.json) return print(data.items, true);
      process.stdout.write(table(data.items, spec.columns) + '\n');
    });
  if (!spec.noShow) {
    cmd
      .command('show')
      .argument('<id>')
      .description(`one of the ${spec.what} with its history`)
      .option('--json', 'print JSON')
      .action(async (id: string, o: { json?: boolean }, c: Command) =>
        print(await adminCall(adminTarget(c.optsWithGlobals().config), 'GET', `${spec.path}/${encodeURIComponent(id)}`), !!o.json),
      );
  }
  return cmd;
}
