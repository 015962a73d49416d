// A private redis-server child for outage tests: the shared Redis is never touched.
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { Redis } from 'ioredis';
import { sleep } from './common.js';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

export class PrivateRedis {
  private child: ChildProcess | null = null;
  constructor(readonly port: number) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Starts redis-server on the port (no persistence) and waits until it answers PING (bounded). */
  async start(): Promise<void> {
    const child = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    this.child = child;
    const until = Date.now() + 10_000;
    for (;;) {
      const r = new Redis(this.url, { lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
      r.on('error', () => undefined);
      try {
        await r.connect();
        if ((await r.ping()) === 'PONG') {
          r.disconnect();
          return;
        }
      } catch {
        r.disconnect();
      }
      if (child.exitCode !== null || Date.now() > until) throw new Error(`private redis-server on ${this.port} did not start`);
      await sleep(50);
    }
  }

  /** SIGKILLs the server (its data is gone: no persistence) and waits for the exit. */
  async kill(): Promise<void> {
    const child = this.child;
    this.child = null;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  }
}
