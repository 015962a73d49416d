/**
 * A lean keep-alive JSON POST for the load generators: HTTP/1.1 written and read by hand over a pool of plain TCP
 * sockets, one request in flight per socket. The generator shares the machine's two cores with Ferry, so what it
 * spends per request is taken from what it measures: node:http cost about 80 µs of CPU per request here, two and a
 * half times autocannon's own client; this costs about what autocannon does. It speaks only what Ferry answers: a
 * status line, headers, and a body sized by Content-Length or sent chunked.
 */
import net from 'node:net';

export interface JsonResponse {
  status: number;
  /** The body parsed as JSON (null when it is not JSON); parsed on first read. */
  readonly json: any;
}

class BufferedResponse implements JsonResponse {
  private parsed: unknown = undefined;

  constructor(
    readonly status: number,
    private readonly body: Buffer,
  ) {}

  get json(): any {
    if (this.parsed === undefined) {
      try {
        this.parsed = JSON.parse(this.body.toString('utf8'));
      } catch {
        this.parsed = null; // not JSON
      }
    }
    return this.parsed;
  }
}

interface Request {
  text: string;
  resolve: (res: JsonResponse) => void;
  reject: (err: Error) => void;
}

const HEAD_END = Buffer.from('\r\n\r\n');

/** One keep-alive socket and the response it is reading. */
class Connection {
  readonly socket: net.Socket;
  current: Request | null = null;
  deadline = 0;
  private buf: Buffer = Buffer.alloc(0);
  private connected = false;
  private closed = false;

  constructor(
    host: string,
    port: number,
    private readonly onFree: (c: Connection) => void,
    private readonly onGone: (c: Connection) => void,
  ) {
    this.socket = net.connect({ host, port, noDelay: true });
    this.socket.on('connect', () => {
      this.connected = true;
    });
    this.socket.on('data', (chunk: Buffer) => this.read(chunk));
    this.socket.on('error', (err) => this.close(err));
    this.socket.on('close', () => this.close(new Error('connection closed')));
  }

  send(req: Request, timeoutMs: number): void {
    this.current = req;
    this.deadline = Date.now() + timeoutMs;
    this.socket.write(req.text);
  }

  close(err: Error): void {
    if (this.closed) return;
    this.closed = true;
    this.socket.destroy();
    const req = this.current;
    this.current = null;
    this.onGone(this);
    // A request whose socket failed before it connected never reached the server either way; report it as failed.
    if (req) req.reject(this.connected ? err : Object.assign(new Error(`connect failed: ${err.message}`), { name: err.name }));
  }

  private read(chunk: Buffer): void {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    const headEnd = this.buf.indexOf(HEAD_END);
    if (headEnd < 0) return;
    const head = this.buf.toString('latin1', 0, headEnd);
    const status = Number(head.slice(9, 12));
    const lower = head.toLowerCase();
    let body: Buffer | null;
    let rest: number;
    const lengthAt = lower.indexOf('\r\ncontent-length:');
    if (lengthAt >= 0) {
      const eol = lower.indexOf('\r\n', lengthAt + 2);
      const length = parseInt(lower.slice(lengthAt + 17, eol < 0 ? undefined : eol), 10);
      const end = headEnd + 4 + length;
      if (this.buf.length < end) return;
      body = this.buf.subarray(headEnd + 4, end);
      rest = end;
    } else if (lower.includes('\r\ntransfer-encoding: chunked')) {
      const parsed = readChunked(this.buf, headEnd + 4);
      if (!parsed) return;
      [body, rest] = parsed;
    } else {
      this.close(new Error('response without Content-Length or chunked body'));
      return;
    }
    this.buf = this.buf.subarray(rest);
    const req = this.current;
    this.current = null;
    if (req) req.resolve(new BufferedResponse(status, body));
    if (/\r\nconnection: *close/.test(lower)) this.close(new Error('server closed the connection'));
    else this.onFree(this);
  }
}

/** A chunked body from `from`, and where it ends; null until all of it is in. */
function readChunked(buf: Buffer, from: number): [Buffer, number] | null {
  const parts: Buffer[] = [];
  let at = from;
  for (;;) {
    const eol = buf.indexOf('\r\n', at);
    if (eol < 0) return null;
    const size = parseInt(buf.toString('latin1', at, eol), 16);
    if (size === 0) {
      const end = buf.indexOf(HEAD_END, eol);
      return end < 0 ? null : [Buffer.concat(parts), end + 4];
    }
    if (buf.length < eol + 2 + size + 2) return null;
    parts.push(buf.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
}

export class JsonClient {
  private readonly host: string;
  private readonly port: number;
  private readonly fixedHead: string;
  private readonly idle: Connection[] = [];
  private readonly all = new Set<Connection>();
  private readonly waiting: Request[] = [];
  private readonly sweeper: NodeJS.Timeout;
  private closed = false;

  constructor(
    baseUrl: string,
    headers: Record<string, string>,
    private readonly maxSockets: number,
    private readonly timeoutMs = 30_000,
  ) {
    const u = new URL(baseUrl);
    this.host = u.hostname;
    this.port = Number(u.port || 80);
    let head = `Host: ${u.host}\r\nContent-Type: application/json\r\n`;
    for (const [k, v] of Object.entries(headers)) head += `${k}: ${v}\r\n`;
    this.fixedHead = head;
    // One timer for every request's timeout, instead of one per request.
    this.sweeper = setInterval(() => {
      const now = Date.now();
      for (const c of this.all) {
        if (c.current && now > c.deadline) c.close(Object.assign(new Error('request timed out'), { name: 'TimeoutError' }));
      }
    }, 100);
    this.sweeper.unref();
  }

  post(path: string, body: unknown): Promise<JsonResponse> {
    if (this.closed) return Promise.reject(new Error('client closed'));
    const data = typeof body === 'string' ? body : JSON.stringify(body);
    const text = `POST ${path} HTTP/1.1\r\n${this.fixedHead}Content-Length: ${Buffer.byteLength(data)}\r\n\r\n${data}`;
    return new Promise((resolve, reject) => {
      const req: Request = { text, resolve, reject };
      const c = this.idle.pop() ?? (this.all.size < this.maxSockets ? this.open() : null);
      if (c) c.send(req, this.timeoutMs);
      else this.waiting.push(req);
    });
  }

  close(): void {
    this.closed = true;
    clearInterval(this.sweeper);
    for (const c of [...this.all]) c.close(new Error('client closed'));
    for (const req of this.waiting.splice(0)) req.reject(new Error('client closed'));
  }

  private open(): Connection {
    const c = new Connection(
      this.host,
      this.port,
      (free) => this.free(free),
      (gone) => this.gone(gone),
    );
    this.all.add(c);
    return c;
  }

  private free(c: Connection): void {
    const next = this.waiting.shift();
    if (next) c.send(next, this.timeoutMs);
    else this.idle.push(c);
  }

  private gone(c: Connection): void {
    this.all.delete(c);
    const i = this.idle.indexOf(c);
    if (i >= 0) this.idle.splice(i, 1);
    // A request waiting for a socket takes a new one in place of the closed one.
    if (!this.closed && this.waiting.length) this.open().send(this.waiting.shift()!, this.timeoutMs);
  }
}
