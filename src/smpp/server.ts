import { EventEmitter } from 'node:events';
import net, { type AddressInfo, type Socket } from 'node:net';
import tls from 'node:tls';
import { Session, type SessionOptions } from './session.js';

export interface SmppServerOptions extends SessionOptions {
  /** Serve SMPP over TLS with these options (key, cert, ...); plain TCP when absent. */
  tls?: tls.TlsOptions;
  /** Connections beyond this are refused at accept (default unlimited). */
  maxSessions?: number;
  /** Called with every accepted session before any of its PDUs is read. */
  onSession?: (session: Session) => void;
}

export interface SmppServerEvents {
  session: [session: Session];
  error: [err: Error];
}

/** Accepts ESME connections and makes a server-role Session of each. */
export class SmppServer extends EventEmitter<SmppServerEvents> {
  readonly sessions = new Set<Session>();
  private readonly server: net.Server;

  constructor(private readonly options: SmppServerOptions = {}) {
    super();
    const accept = (socket: Socket): void => this.accept(socket);
    this.server = options.tls ? tls.createServer(options.tls, accept) : net.createServer(accept);
    this.server.on('error', (err) => this.emit('error', err));
  }

  /** Listens (port 0 picks a free port) and resolves with the bound address. */
  listen(port = 0, host = '127.0.0.1'): Promise<AddressInfo> {
    return new Promise((resolve, reject) => {
      const onError = (err: Error): void => reject(err);
      this.server.once('error', onError);
      this.server.listen(port, host, () => {
        this.server.off('error', onError);
        resolve(this.server.address() as AddressInfo);
      });
    });
  }

  get port(): number {
    return (this.server.address() as AddressInfo | null)?.port ?? 0;
  }

  /** Stops accepting and closes every session (pending requests fail with SessionClosedError). */
  async close(): Promise<void> {
    const closing = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const s of [...this.sessions]) {
      s.close('local');
      s.socket.destroy();
    }
    await closing;
  }

  private accept(socket: Socket): void {
    if (this.options.maxSessions !== undefined && this.sessions.size >= this.options.maxSessions) {
      socket.destroy();
      return;
    }
    socket.on('error', () => undefined); // the session reports errors through 'close'
    const session = new Session(socket, 'server', this.options);
    this.sessions.add(session);
    session.once('close', () => this.sessions.delete(session));
    this.options.onSession?.(session);
    this.emit('session', session);
  }
}
