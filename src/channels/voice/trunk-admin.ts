import { Command } from 'commander';
import type { FastifyInstance } from 'fastify';
import type { CliContext } from '../../cli/cli-context.js';
import { ApiError } from '../../http/errors.js';
import { readTrunk, TrunkInputError, trunkView, type TrunkRegistry } from './trunk-registry.js';

/** /admin/voice/trunks: list, add or replace (a runtime trunk, password sealed), remove; and their health. */
export async function trunkAdminRoutes(app: FastifyInstance, deps: { trunks: TrunkRegistry }): Promise<void> {
  const { trunks } = deps;
  const view = () => trunks.list().map((t) => ({ ...trunkView(t), answering: trunks.isHealthy(t.name) }));
  app.get('/admin/voice/trunks', async (req) => {
    await trunks.refresh();
    return { success: true, code: 'VOICE_TRUNKS', message: 'OK', data: { trunks: view() }, requestId: req.id };
  });
  app.put<{ Params: { name: string }; Body: Record<string, unknown> }>('/admin/voice/trunks/:name', async (req) => {
    let config;
    try {
      config = readTrunk({ ...req.body, name: req.params.name });
    } catch (err) {
      if (err instanceof TrunkInputError) throw new ApiError('VALIDATION_ERROR', { message: `trunk ${req.params.name}: ${err.message}`, data: { errors: [{ field: 'trunk', message: err.message }] } });
      throw err;
    }
    await trunks.save(config);
    const saved = trunks.get(config.name)!;
    req.log.info({ trunk: saved.name, host: saved.host, port: saved.port }, 'voice trunk saved');
    return { success: true, code: 'VOICE_TRUNK_SAVED', message: 'OK', data: trunkView(saved), requestId: req.id };
  });
  app.delete<{ Params: { name: string } }>('/admin/voice/trunks/:name', async (req) => {
    const removed = await trunks.remove(req.params.name);
    if (!removed) {
      const fromFile = trunks.get(req.params.name);
      throw new ApiError('TRUNK_NOT_FOUND', { message: fromFile ? `trunk ${req.params.name} comes from the config file: remove it there` : `no runtime trunk ${req.params.name}` });
    }
    return { success: true, code: 'VOICE_TRUNK_REMOVED', message: 'OK', data: { name: req.params.name }, requestId: req.id };
  });
}

const int = (v: string) => Number.parseInt(v, 10);

/** `ferry voice trunks list|add|remove`, through the running daemon's admin API. */
export function voiceCli(program: Command, ctx: CliContext): void {
  const voice = new Command('voice').description('voice calls: SIP trunks');
  const trunks = new Command('trunks').description('SIP trunks calls go out through');
  trunks.addCommand(
    new Command('list')
      .option('--json', 'JSON output')
      .action(async function (this: Command, o: { json?: boolean }) {
        const data = await ctx.admin(this).call<{ trunks: unknown[] }>('GET', '/admin/voice/trunks');
        ctx.print(data.trunks, o.json ?? false);
      }),
  );
  trunks.addCommand(
    new Command('add')
      .description('add or replace a runtime trunk (the password is kept encrypted; give it with --password or FERRY_TRUNK_PASSWORD)')
      .argument('<name>')
      .requiredOption('--host <host>')
      .option('--port <port>', 'SIP port', int, 5060)
      .option('--transport <udp|tcp>', 'transport', 'udp')
      .option('--username <user>')
      .option('--password <password>')
      .option('--priority <n>', 'failover order, lowest first', int, 100)
      .option('--max-calls-per-second <n>', 'new calls a second', Number, 10)
      .option('--max-concurrent-calls <n>', 'calls up at once', int, 100)
      .option('--caller-id-prefix <digits...>', 'caller IDs it may present')
      .option('--destination-prefix <digits...>', 'destinations it carries')
      .option('--json', 'JSON output')
      .action(async function (this: Command, name: string, o: Record<string, unknown>) {
        const body = {
          host: o.host,
          port: o.port,
          transport: o.transport,
          username: o.username ?? null,
          password: (o.password as string | undefined) ?? process.env.FERRY_TRUNK_PASSWORD ?? null,
          priority: o.priority,
          maxCallsPerSecond: o.maxCallsPerSecond,
          maxConcurrentCalls: o.maxConcurrentCalls,
          callerIdPrefixes: o.callerIdPrefix ?? [],
          destinationPrefixes: o.destinationPrefix ?? [],
        };
        ctx.print(await ctx.admin(this).call('PUT', `/admin/voice/trunks/${encodeURIComponent(name)}`, body), Boolean(o.json));
      }),
  );
  trunks.addCommand(
    new Command('remove')
      .argument('<name>')
      .action(async function (this: Command, name: string) {
        ctx.print(await ctx.admin(this).call('DELETE', `/admin/voice/trunks/${encodeURIComponent(name)}`), false);
      }),
  );
  voice.addCommand(trunks);
  program.addCommand(voice);
}
