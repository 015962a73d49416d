import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the provider does with one request. `delayMs` holds the answer that long first. */
export type Behaviour =
  | { status: 200; delayMs?: number }
  | { status: 429; retryAfter?: string; delayMs?: number }
  | { status: 500 | 502 | 503; delayMs?: number }
  | { status: 400; code: string; message?: string; delayMs?: number }
  | { hang: true }
  /** Drops the connection without an answer. */
  | { reset: true };

export interface ProviderRequest {
  to: string;
  account: string;
  body: string;
  /** 1 for the first request for this recipient, 2 for the next, ... */
  n: number;
  /** What `stamp()` returned when it arrived (the test's clock). */
  at: number;
  answered: number | 'hung' | 'reset' | null;
}

export const OK: Behaviour = { status: 200 };

/**
 * A loopback HTTP provider that fails on demand, for the outbound contract test: POST /messages with JSON
 * {to, account, body} answers 200 {id}, 429 with Retry-After, 5xx, 400 {error: {code, message}}, hangs, or drops the
 * connection, per recipient as scripted. It counts requests per recipient and concurrency per account.
 */
export class FailOnDemandProvider {
  readonly requests: ProviderRequest[] = [];
  /** Behaviour when a recipient has no script left. */
  fallback: (req: ProviderRequest) => Behaviour = () => OK;
  /** Every request answered 503 while set. */
  down = false;
  /** The time a request is recorded at (the test's clock). */
  stamp: () => number = Date.now;
  private readonly scripts = new Map<string, Behaviour[]>();
  private readonly perRecipient = new Map<string, number>();
  private readonly inFlight = new Map<string, number>();
  private readonly maxInFlight = new Map<string, number>();
  private readonly hung: Array<{ res: ServerResponse; req: ProviderRequest; id: string }> = [];
  private seq = 0;
  private concurrent = 0;
  maxConcurrent = 0;

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<FailOnDemandProvider> {
    const ref: { self?: FailOnDemandProvider } = {};
    const server = createServer((req, res) => ref.self!.handle(req, res));
    server.keepAliveTimeout = 10_000;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    ref.self = new FailOnDemandProvider(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return ref.self;
  }

  /** The next requests for `to` get these answers, in order; then the fallback. */
  on(to: string, ...behaviours: Behaviour[]): this {
    this.scripts.set(to, [...(this.scripts.get(to) ?? []), ...behaviours]);
    return this;
  }

  countFor(to: string): number {
    return this.perRecipient.get(to) ?? 0;
  }

  /** Requests whose recipient starts with `prefix`. */
  matching(prefix: string): ProviderRequest[] {
    return this.requests.filter((r) => r.to.startsWith(prefix));
  }

  /** Most requests of one account in flight at once. */
  maxConcurrentFor(account: string): number {
    return this.maxInFlight.get(account) ?? 0;
  }

  get hungCount(): number {
    return this.hung.length;
  }

  /** Answers every hung request 200 now. */
  releaseHung(): void {
    for (const h of this.hung.splice(0)) {
      h.req.answered = 200;
      this.finish(h.req);
      h.res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id: h.id }));
    }
  }

  async close(): Promise<void> {
    for (const h of this.hung.splice(0)) h.res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (raw += c));
    req.on('end', () => {
      let body: { to?: string; account?: string; body?: string };
      try {
        body = JSON.parse(raw) as typeof body;
      } catch {
        res.writeHead(400).end('{"error":{"code":"bad_json"}}');
        return;
      }
      const to = String(body.to ?? '');
      const account = String(body.account ?? '');
      const n = (this.perRecipient.get(to) ?? 0) + 1;
      this.perRecipient.set(to, n);
      const r: ProviderRequest = { to, account, body: String(body.body ?? ''), n, at: this.stamp(), answered: null };
      this.requests.push(r);
      this.concurrent++;
      this.maxConcurrent = Math.max(this.maxConcurrent, this.concurrent);
      const now = (this.inFlight.get(account) ?? 0) + 1;
      this.inFlight.set(account, now);
      this.maxInFlight.set(account, Math.max(this.maxInFlight.get(account) ?? 0, now));
      const script = this.scripts.get(to);
      const b: Behaviour = this.down ? { status: 503 } : (script?.shift() ?? this.fallback(r));
      const id = `pm_${++this.seq}`;
      if ('hang' in b) {
        r.answered = 'hung';
        this.hung.push({ res, req: r, id });
        res.once('close', () => {
          const i = this.hung.findIndex((h) => h.res === res);
          if (i >= 0) {
            this.hung.splice(i, 1);
            this.finish(r);
          }
        });
        return;
      }
      if ('reset' in b) {
        r.answered = 'reset';
        this.finish(r);
        req.socket.destroy();
        return;
      }
      const answer = (): void => {
        this.finish(r);
        r.answered = b.status;
        if (b.status === 200) {
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id }));
        } else if (b.status === 429) {
          res.writeHead(429, { 'content-type': 'application/json', ...(b.retryAfter !== undefined ? { 'retry-after': b.retryAfter } : {}) });
          res.end(JSON.stringify({ error: { code: 'rate_limited', message: 'slow down' } }));
        } else if (b.status === 400) {
          res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code: b.code, message: b.message ?? 'rejected' } }));
        } else {
          res.writeHead(b.status, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code: 'server_error', message: 'internal error' } }));
        }
      };
      if (b.delayMs) setTimeout(answer, b.delayMs);
      else answer();
    });
  }

  private finish(r: ProviderRequest): void {
    this.concurrent--;
    const n = (this.inFlight.get(r.account) ?? 1) - 1;
    if (n <= 0) this.inFlight.delete(r.account);
    else this.inFlight.set(r.account, n);
  }
}
