import { spawn, spawnSync } from 'node:child_process';
import dgram from 'node:dgram';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Whether the sipp binary (Debian sip-tester) is on PATH. */
export const HAVE_SIPP = spawnSync('sh', ['-c', 'command -v sipp'], { stdio: 'ignore' }).status === 0;

const FIXTURES = fileURLToPath(new URL('./fixtures/sipp/', import.meta.url));

export interface SippResult {
  /** 0: every call passed; 1: a call failed; 97/99/-1/-2: see `sipp -h`. null when killed. */
  code: number | null;
  /** The tail of SIPp's screen output and the contents of its -trace_err log, for failure messages. */
  output: string;
  errors: string;
}

export interface SippOptions {
  scenario: string;
  port: number;
  transport?: 'udp' | 'tcp';
  /** host:port of the peer when SIPp is the UAC. */
  remote?: string;
  /** A hard stop in case SIPp itself hangs (its own -timeout is 20 s). */
  killAfterMs?: number;
}

export interface SippProcess {
  done: Promise<SippResult>;
  /** Resolves once SIPp holds its port (so a UAC may send to it). */
  ready: Promise<void>;
  kill(): void;
}

function canBind(port: number, transport: 'udp' | 'tcp'): Promise<boolean> {
  return new Promise((resolve) => {
    if (transport === 'udp') {
      const s = dgram.createSocket('udp4');
      s.once('error', () => resolve(false));
      s.bind(port, '127.0.0.1', () => s.close(() => resolve(true)));
    } else {
      const srv = net.createServer();
      srv.once('error', () => resolve(false));
      srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
    }
  });
}

/** A port free for both UDP and TCP right now. */
export async function freePort(): Promise<number> {
  for (let i = 0; i < 20; i++) {
    const port = await new Promise<number>((resolve) => {
      const srv = net.createServer();
      srv.listen(0, '127.0.0.1', () => {
        const p = (srv.address() as net.AddressInfo).port;
        srv.close(() => resolve(p));
      });
    });
    if (await canBind(port, 'udp')) return port;
  }
  throw new Error('no free port');
}

/** Runs one bounded SIPp scenario from fixtures/sipp in a scratch directory (for its -trace_err log). */
export function runSipp(o: SippOptions): SippProcess {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-sipp-'));
  const args = [
    ...(o.remote ? [o.remote] : []),
    '-sf', join(FIXTURES, o.scenario),
    '-i', '127.0.0.1', '-p', String(o.port),
    '-t', o.transport === 'tcp' ? 't1' : 'u1',
    '-m', '1', '-timeout', '20s', '-timeout_error', '-trace_err', '-nostdin',
  ];
  const child = spawn('sipp', args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (d: Buffer): void => {
    output = (output + d.toString('latin1')).slice(-4000);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const killer = setTimeout(() => child.kill('SIGKILL'), o.killAfterMs ?? 30_000);
  const done = new Promise<SippResult>((resolve) => {
    child.once('close', (code) => {
      clearTimeout(killer);
      let errors = '';
      for (const f of readdirSync(dir)) if (f.endsWith('_errors.log')) errors += readFileSync(join(dir, f), 'latin1');
      rmSync(dir, { recursive: true, force: true });
      resolve({ code, output, errors: errors.slice(-4000) });
    });
    child.once('error', (err) => {
      clearTimeout(killer);
      resolve({ code: -100, output: String(err), errors: '' });
    });
  });
  const ready = (async (): Promise<void> => {
    for (let i = 0; i < 200; i++) {
      if (child.exitCode !== null) return;
      if (!(await canBind(o.port, o.transport ?? 'udp'))) return;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error('sipp did not bind its port');
  })();
  return {
    done,
    ready,
    kill: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}
