import net from 'node:net';
import tls from 'node:tls';
import { SessionClosedError, SmppError } from './errors.js';
import { Session, type BindType, type SessionOptions } from './session.js';

export interface ConnectOptions extends SessionOptions {
  host: string;
  port: number;
  /** true, or TLS options, to connect over TLS. */
  tls?: boolean | tls.ConnectionOptions;
  /** Give up connecting after this long (default 10 s). */
  connectTimeoutMs?: number;
}

export interface BindOptions extends ConnectOptions {
  bindType: BindType;
  system_id: string;
  password: string;
  system_type?: string;
  interface_version?: number;
  addr_ton?: number;
  addr_npi?: number;
  address_range?: string;
  /** Timeout for the bind response (default: responseTimeoutMs). */
  bindTimeoutMs?: number;
}

/** A connection attempt that failed before a session existed. */
export class SmppConnectError extends SmppError {}

/** Opens a TCP (or TLS) connection and wraps it in a client-role Session, not yet bound. */
export function connect(options: ConnectOptions): Promise<Session> {
  return new Promise((resolve, reject) => {
    const useTls = options.tls !== undefined && options.tls !== false;
    const socket = useTls
      ? tls.connect({ host: options.host, port: options.port, ...(typeof options.tls === 'object' ? options.tls : {}) })
      : net.connect({ host: options.host, port: options.port });
    socket.setNoDelay(true);
    const timer = setTimeout(() => fail(new SmppConnectError(`connect to ${options.host}:${options.port} timed out`)), options.connectTimeoutMs ?? 10_000);
    const fail = (err: Error): void => {
      clearTimeout(timer);
      socket.destroy();
      reject(err instanceof SmppError ? err : new SmppConnectError(`connect to ${options.host}:${options.port} failed: ${err.message}`, { cause: err }));
    };
    socket.once('error', fail);
    socket.once(useTls ? 'secureConnect' : 'connect', () => {
      clearTimeout(timer);
      socket.off('error', fail);
      resolve(new Session(socket, 'client', options));
    });
  });
}

/**
 * Connects and binds. On a refusal (SmppBindError carrying the status), a timeout or a close, the connection is
 * closed and the error rethrown; reconnect policy belongs to the caller.
 */
export async function bindClient(options: BindOptions): Promise<Session> {
  const session = await connect(options);
  try {
    await session.bind(
      options.bindType,
      {
        system_id: options.system_id,
        password: options.password,
        system_type: options.system_type ?? '',
        interface_version: options.interface_version,
        addr_ton: options.addr_ton ?? 0,
        addr_npi: options.addr_npi ?? 0,
        address_range: options.address_range ?? '',
      },
      options.bindTimeoutMs,
    );
  } catch (err) {
    session.close('local');
    throw err instanceof Error ? err : new SessionClosedError('local', err);
  }
  return session;
}
