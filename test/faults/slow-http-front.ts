import { Agent, createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Hop-by-hop headers: they describe one connection and are not passed on. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'proxy-connection', 'upgrade', 'te', 'trailer']);

/**
 * A slow service in front of a fast one, on loopback: each request goes on to `target` at once (the service gets it),
 * and its answer is held `delayMs` before it goes back. A client that dies meanwhile never gets the answer, as with a
 * service that is slow to answer when its caller crashes.
 */
export class SlowHttpFront {
  private server: Server | null = null;
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 512 });

  constructor(
    private readonly target: string,
    public delayMs: number,
  ) {}

  get url(): string {
    const a = this.server?.address() as AddressInfo | null;
    if (!a) throw new Error('the front is not listening');
    return `http://127.0.0.1:${a.port}`;
  }

  async start(): Promise<void> {
    const server = createServer((req, res) => this.forward(req, res));
    server.keepAliveTimeout = 65_000;
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
  }

  async stop(): Promise<void> {
    const s = this.server;
    this.server = null;
    this.agent.destroy();
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  private forward(req: IncomingMessage, res: ServerResponse): void {
    const headers: Record<string, string | string[]> = {};
    for (const [k, v] of Object.entries(req.headers)) if (v !== undefined && !HOP_BY_HOP.has(k) && k !== 'host') headers[k] = v;
    const upstream = request(this.target + (req.url ?? '/'), { method: req.method, headers, agent: this.agent }, (answer) => {
      const chunks: Buffer[] = [];
      answer.on('data', (c: Buffer) => chunks.push(c));
      answer.on('end', () => {
        const body = Buffer.concat(chunks);
        const out: Record<string, string | string[]> = {};
        for (const [k, v] of Object.entries(answer.headers)) if (v !== undefined && !HOP_BY_HOP.has(k)) out[k] = v;
        out['content-length'] = String(body.length);
        setTimeout(() => {
          if (res.destroyed) return;
          res.writeHead(answer.statusCode ?? 502, out);
          res.end(body);
        }, this.delayMs);
      });
    });
    upstream.on('error', () => {
      if (!res.headersSent && !res.destroyed) res.writeHead(502).end();
    });
    req.pipe(upstream);
  }
}
