import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { parse as parseYaml } from 'yaml';
import type { CliContext } from '../../../cli/cli-context.js';

function int(ctx: CliContext, name: string, v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n)) throw ctx.error(`${name} must be a whole number, got ${v}`);
  return n;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
}

export function upstreamsCommand(ctx: CliContext): Command {
  const cmd = new Command('upstreams').description('upstream SMSCs (through the running daemon’s admin API)');
  const admin = ctx.admin(cmd);

  cmd
    .command('list')
    .description('every upstream with its binds and window (passwords are never shown)')
    .option('--json', 'print JSON')
    .action(async (o) => ctx.print(await admin.call('GET', '/admin/upstreams'), !!o.json));

  cmd
    .command('show ID')
    .description('one upstream’s config (password masked) and status')
    .option('--json', 'print JSON')
    .action(async (id: string, o) => ctx.print(await admin.call('GET', `/admin/upstreams/${encodeURIComponent(id)}`), !!o.json));

  cmd
    .command('set ID')
    .description(
      'add or replace a runtime upstream (stored in the database, password encrypted). The whole config is replaced: ' +
        'keys not given take their defaults; the password is kept when left out',
    )
    .option('--file <path>', 'the upstream config as JSON (or YAML), the same keys as under smpp.upstreams in the config file')
    .option('--host <host>', 'SMSC host')
    .option('--port <n>', 'SMSC port')
    .option('--system-id <id>', 'system_id to bind with')
    .option('--password <pw>', 'bind password (visible in the process list: prefer --password-stdin)')
    .option('--password-stdin', 'read the bind password from standard input')
    .option('--system-type <t>', 'system_type to bind with')
    .option('--bind-mode <mode>', 'transceiver or transmitter+receiver')
    .option('--binds <n>', 'number of binds')
    .option('--window <n>', 'outstanding submits per bind')
    .option('--max-tps <n>', 'submits per second across all binds, 0 = no limit')
    .option('--tls', 'connect with TLS')
    .option('--receipt-id-format <f>', 'hex, dec or as-is')
    .option('--json', 'print JSON')
    .action(async (id: string, o) => {
      let body: Record<string, unknown> = {};
      if (o.file) {
        let parsed: unknown;
        try {
          parsed = parseYaml(readFileSync(o.file, 'utf8'));
        } catch (err) {
          throw ctx.error(`cannot read ${o.file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message.split('\n')[0]}`);
        }
        if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw ctx.error(`${o.file} must hold one upstream object`);
        body = parsed as Record<string, unknown>;
      }
      // Flags win over the file.
      if (o.host) body.host = o.host;
      if (o.port !== undefined) body.port = int(ctx, '--port', o.port);
      if (o.systemId !== undefined) body.systemId = o.systemId;
      if (o.passwordStdin) body.password = await readStdin();
      else if (o.password !== undefined) body.password = o.password;
      if (o.systemType !== undefined) body.systemType = o.systemType;
      if (o.bindMode) body.bindMode = o.bindMode;
      if (o.binds !== undefined) body.binds = int(ctx, '--binds', o.binds);
      if (o.window !== undefined) body.window = int(ctx, '--window', o.window);
      if (o.maxTps !== undefined) body.maxTps = int(ctx, '--max-tps', o.maxTps);
      if (o.tls) body.tls = true;
      if (o.receiptIdFormat) body.receiptIdFormat = o.receiptIdFormat;
      ctx.print(await admin.call('PUT', `/admin/upstreams/${encodeURIComponent(id)}`, body), !!o.json);
    });

  cmd
    .command('remove ID')
    .description('remove a runtime upstream (config-file upstreams are changed in the file)')
    .option('--json', 'print JSON')
    .action(async (id: string, o) => ctx.print(await admin.call('DELETE', `/admin/upstreams/${encodeURIComponent(id)}`), !!o.json));

  return cmd;
}
