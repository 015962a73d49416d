/**
 * Kannel for the `kannel` scenario: Debian's bearerbox and smsbox on loopback, configured as the comparison states
 * (HTTP sendsms → N SMPP transceiver binds × window W to an SMSC, delivery reports kept in memory, no store file,
 * logging as much as Ferry does in the run: see `kannelLogging`), against its own SMSC simulator run exactly as
 * Ferry's is. Nothing is installed here: where the binaries are missing, `kannelBinaries()` says so and the scenario
 * skips.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Child, freePort } from './proc.js';

const SEARCH = ['/usr/sbin', '/usr/local/sbin', '/usr/bin', '/usr/local/bin'];

/** Paths of bearerbox and smsbox, or null when either is missing. */
export function kannelBinaries(): { bearerbox: string; smsbox: string } | null {
  const find = (name: string) => SEARCH.map((d) => join(d, name)).find((p) => existsSync(p));
  const bearerbox = find('bearerbox');
  const smsbox = find('smsbox');
  return bearerbox && smsbox ? { bearerbox, smsbox } : null;
}

export interface KannelOptions {
  runDir: string;
  logDir: string;
  smscPort: number;
  binds: number;
  window: number;
  env: NodeJS.ProcessEnv;
  /** Ferry's log level in the run (pino's names): Kannel logs as much (see `kannelLogging`). */
  logLevel: string;
}

/**
 * Kannel's logging matched to Ferry's level. Both boxes log to stderr only (read by the bench into the log folder,
 * as Ferry's stdout is) at the Kannel level of the same name: debug 0, info 1, warning 2, error 3, panic 4. With
 * Ferry at info or below (its access log on: one line per HTTP request) Kannel's access logs are on too, each box
 * to a file; above it they are off (no access-log line at all). Without `-v`, Kannel writes everything to stderr
 * at debug level, PDU dumps included, whatever the config's log-level says (that is the log file's level).
 */
export function kannelLogging(ferryLevel: string): { level: number; accessLog: boolean; describe: string } {
  const level = ({ trace: 0, debug: 0, info: 1, warn: 2, error: 3, fatal: 4, silent: 4 } as Record<string, number>)[ferryLevel] ?? 2;
  const accessLog = level <= 1;
  const name = ['debug', 'info', 'warning', 'error', 'panic'][level];
  return { level, accessLog, describe: `Kannel logs at ${name} (Ferry at ${ferryLevel}), access logs ${accessLog ? 'on' : 'off'}, as Ferry's` };
}

export class Kannel {
  bearerbox: Child | undefined;
  smsbox: Child | undefined;
  readonly user = 'bench';
  readonly password = 'bench123';
  ports = { admin: 0, smsbox: 0, sendsms: 0 };
  private readonly adminPassword = 'bench-admin';

  constructor(private readonly opts: KannelOptions) {}

  get sendsmsUrl(): string {
    return `http://127.0.0.1:${this.ports.sendsms}`;
  }

  async start(): Promise<void> {
    const bins = kannelBinaries();
    if (!bins) throw new Error('bearerbox and smsbox are not installed (Debian package kannel)');
    this.ports = { admin: await freePort(), smsbox: await freePort(), sendsms: await freePort() };
    const conf = join(this.opts.runDir, 'kannel.conf');
    writeFileSync(conf, this.config());
    const v = ['-v', String(kannelLogging(this.opts.logLevel).level)];
    this.bearerbox = new Child('bearerbox', bins.bearerbox, [...v, conf], { cwd: this.opts.runDir, env: this.opts.env, logDir: this.opts.logDir });
    await this.until('bearerbox admin port', () => this.status().then((s) => s.includes('Status:')));
    this.smsbox = new Child('smsbox', bins.smsbox, [...v, conf], { cwd: this.opts.runDir, env: this.opts.env, logDir: this.opts.logDir });
    await this.until('smsbox sendsms port', () => fetch(`${this.sendsmsUrl}/cgi-bin/sendsms`).then(() => true));
    await this.until(`${this.opts.binds} SMPP binds online`, async () => (await this.status()).match(/\(online /g)?.length === this.opts.binds);
  }

  /** bearerbox's status page (text). */
  async status(): Promise<string> {
    return (await fetch(`http://127.0.0.1:${this.ports.admin}/status.txt?password=${this.adminPassword}`)).text();
  }

  async stop(): Promise<void> {
    await this.smsbox?.stop(5000);
    await this.bearerbox?.stop(10_000);
  }

  private async until(what: string, check: () => Promise<boolean>): Promise<void> {
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      for (const c of [this.bearerbox, this.smsbox]) {
        if (c && !c.running) throw new Error(`${c.name} exited (${c.exit?.code ?? c.exit?.signal}) while waiting for ${what}:\n${c.lastLines()}`);
      }
      if (await check().catch(() => false)) return;
      await sleep(100);
    }
    throw new Error(`Kannel: timed out waiting for ${what}`);
  }

  private config(): string {
    const { logDir, smscPort, binds, window } = this.opts;
    const { accessLog } = kannelLogging(this.opts.logLevel);
    const access = (box: string) => (accessLog ? `access-log = "${join(logDir, `${box}-access.log`)}"\n` : '');
    // One smsc group per bind, all with one smsc-id: Kannel 1.4 opens one connection per group.
    const smsc = Array.from(
      { length: binds },
      () => `group = smsc
smsc = smpp
smsc-id = sim
host = 127.0.0.1
port = ${smscPort}
transceiver-mode = true
smsc-username = kannel
smsc-password = bench
system-type = ""
max-pending-submits = ${window}
enquire-link-interval = 30
reconnect-delay = 1
`,
    ).join('\n');
    return `group = core
admin-port = ${this.ports.admin}
admin-interface = 127.0.0.1
admin-password = ${this.adminPassword}
admin-allow-ip = 127.0.0.1
smsbox-port = ${this.ports.smsbox}
smsbox-interface = 127.0.0.1
box-allow-ip = 127.0.0.1
dlr-storage = internal
${access('bearerbox')}
${smsc}
group = smsbox
bearerbox-host = 127.0.0.1
bearerbox-port = ${this.ports.smsbox}
sendsms-port = ${this.ports.sendsms}
sendsms-interface = 127.0.0.1
global-sender = FerryBench
${access('smsbox')}
group = sendsms-user
username = ${this.user}
password = ${this.password}
max-messages = 1
concatenation = false
`;
  }
}
