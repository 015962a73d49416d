import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import type { FastifyInstance } from 'fastify';
import type { CliContext } from '../../cli/cli-context.js';
import { PushSimulators } from './simulators.js';

function port(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('expected a port (0-65535)');
  return n;
}

/** A notification as the simulators received it, for `ferry sim push received` and the standalone run's output. */
export interface ReceivedPush {
  service: 'fcm' | 'apns' | 'apns-sandbox';
  at: string;
  token: string;
  status: number;
  result: string;
}

function received(sims: PushSimulators, limit: number): ReceivedPush[] {
  const all: ReceivedPush[] = [
    ...sims.fcm.received().map((r) => ({ service: 'fcm' as const, at: new Date(r.at).toISOString(), token: r.token, status: r.status, result: r.result })),
    ...sims.apns.production.received().map((r) => ({ service: 'apns' as const, at: new Date(r.at).toISOString(), token: r.token, status: r.status, result: r.reason ?? r.apnsId })),
    ...sims.apns.sandbox.received().map((r) => ({ service: 'apns-sandbox' as const, at: new Date(r.at).toISOString(), token: r.token, status: r.status, result: r.reason ?? r.apnsId })),
  ];
  return all.sort((a, b) => a.at.localeCompare(b.at)).slice(-limit);
}

/** `/admin/sim/push/received`: what the daemon's embedded simulators received (404 when they do not run). */
export async function pushSimAdminRoutes(app: FastifyInstance, deps: { simulators: () => PushSimulators | null }): Promise<void> {
  app.get<{ Querystring: { limit?: number } }>(
    '/admin/sim/push/received',
    { schema: { querystring: { type: 'object', properties: { limit: { type: 'integer', minimum: 1, maximum: 1000, default: 100 } } } } },
    async (req, reply) => {
      const sims = deps.simulators();
      if (!sims) return reply.code(404).send({ success: false, code: 'NOT_FOUND', message: 'The push simulators do not run in this daemon (push.simulator)', requestId: req.id });
      return { success: true, code: 'OK', message: 'OK', data: { received: received(sims, req.query.limit ?? 100) }, requestId: req.id };
    },
  );
}

/** `ferry sim push` (run): standalone FCM and APNs simulators; `ferry sim push received`: what the daemon's embedded ones got. */
export function pushSimulatorCli(cmd: Command, ctx: CliContext): void {
  const run = new Command('run')
    .description('standalone FCM and APNs simulators on loopback, with a service account and an APNs key made for them to upload to an app')
    .option('--fcm-port <port>', 'the FCM simulator (HTTP: messages:send and the OAuth2 token endpoint)', port, 0)
    .option('--apns-port <port>', 'the APNs production simulator (HTTP/2 over TLS, self-signed)', port, 0)
    .option('--apns-sandbox-port <port>', 'the APNs sandbox simulator', port, 0)
    .option('--out <dir>', 'where the credentials are written', 'ferry-push-sim')
    .action(async (o: { fcmPort: number; apnsPort: number; apnsSandboxPort: number; out: string }) => {
      const sims = new PushSimulators();
      await sims.start({ fcm: o.fcmPort, apns: o.apnsPort, apnsSandbox: o.apnsSandboxPort });
      const sa = sims.defaultServiceAccount();
      const key = sims.defaultApnsKey('com.example.app');
      sims.trustServiceAccount(sa);
      sims.trustApnsKey(key, false);
      const dir = resolve(o.out);
      mkdirSync(dir, { recursive: true });
      const serviceAccount = {
        type: 'service_account',
        project_id: sa.projectId,
        private_key_id: 'simulated',
        private_key: sa.privateKey,
        client_email: sa.clientEmail,
        token_uri: sims.fcm.tokenUrl,
      };
      writeFileSync(join(dir, 'service-account.json'), `${JSON.stringify(serviceAccount, null, 2)}\n`, { mode: 0o600 });
      writeFileSync(join(dir, `AuthKey_${key.keyId}.p8`), key.privateKey, { mode: 0o600 });
      writeFileSync(join(dir, 'apns-ca.pem'), sims.apnsCa);
      const app = {
        name: 'Simulated app',
        fcm: { serviceAccount: '<the text of service-account.json>' },
        apns: { privateKey: `<the text of AuthKey_${key.keyId}.p8>`, keyId: key.keyId, teamId: key.teamId, bundleId: key.bundleId, environment: 'production' },
        endpoints: { fcm: sims.fcm.url, oauthToken: sims.fcm.tokenUrl, apns: sims.apns.production.url },
      };
      process.stdout.write(
        `FCM simulator          ${sims.fcm.url} (token endpoint ${sims.fcm.tokenUrl})\n` +
          `APNs simulator         ${sims.apns.production.url} (sandbox ${sims.apns.sandbox.url}; TLS certificate ${join(dir, 'apns-ca.pem')})\n` +
          `credentials            ${dir}\n\nan app that sends to them (POST /v1/push/apps):\n${JSON.stringify(app, null, 2)}\n\n` +
          'tokens starting unregistered-, invalid-, quota-, unavailable- (FCM) and dead0000, bad00000, ba5e0000, 5e000000 (APNs) answer errors.\n' +
          'received notifications follow; Ctrl-C stops.\n',
      );
      // Printed once each: what arrived after the last one printed (each simulator keeps its newest 1,000).
      const printed = new WeakSet<object>();
      const sources = [sims.fcm, sims.apns.production, sims.apns.sandbox];
      const timer = setInterval(() => {
        const fresh = sources.flatMap((s) => s.received().filter((r) => !printed.has(r)));
        for (const r of fresh) printed.add(r);
        for (const r of fresh.sort((a, b) => a.at - b.at)) {
          const result = 'result' in r ? r.result : (r.reason ?? r.apnsId);
          process.stdout.write(`${new Date(r.at).toISOString()} ${r.status} ${r.token} ${result}\n`);
        }
      }, 1000);
      await new Promise<void>((done) => {
        const stop = () => done();
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      });
      clearInterval(timer);
      await sims.stop();
    });
  cmd.addCommand(run, { isDefault: true });
  cmd.addCommand(
    new Command('received')
      .description("what the running daemon's embedded simulators received, oldest first")
      .option('--limit <n>', 'at most this many', (v) => Number(v), 50)
      .option('--json', 'print JSON')
      .action(async function (this: Command, o: { limit: number; json?: boolean }) {
        const data = (await ctx.admin(this).call('GET', `/admin/sim/push/received?limit=${o.limit}`)) as { received: ReceivedPush[] };
        if (o.json) ctx.print(data, true);
        else for (const r of data.received) process.stdout.write(`${r.at} ${r.service} ${r.status} ${r.token} ${r.result}\n`);
      }),
  );
}
