// A loopback TCP proxy a fault test cuts and restores: "down" refuses new connections and drops the open ones (a
// provider or relay that is unreachable), "up" forwards to the target again. The target may change while it runs.
import net from 'node:net';

export class TcpProxy {
  private readonly sockets = new Set<net.Socket>();
  private server: net.Server | null = null;
  port = 0;

  constructor(public target: number | null = null) {}

  get url(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** Listens (on the same port as before, after a `down`) and forwards to the target. */
  async up(): Promise<void> {
    if (this.server) return;
    // Without a target a connection is refused at once: a request held instead could time out at the sender and
    // still arrive later (a duplicate the test did not cause).
    const server = net.createServer((client) => (this.target === null ? client.destroy() : this.pipe(client, this.target)));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as net.AddressInfo).port;
    this.server = server;
  }

  private pipe(client: net.Socket, target: number): void {
    const upstream = net.connect(target, '127.0.0.1');
    for (const s of [client, upstream]) {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
      s.on('error', () => undefined);
    }
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  }

  /** Refuses connections (nothing listens on the port) and drops the open ones. */
  async down(): Promise<void> {
    const s = this.server;
    this.server = null;
    for (const sock of this.sockets) sock.destroy();
    this.sockets.clear();
    if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
  }
}
