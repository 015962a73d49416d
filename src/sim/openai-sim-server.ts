import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { bearerMatches, readCappedBody } from './openai-http.js';

/** What every simulator records of a request; each adds the fields of its own endpoint. */
export interface SimRequestBase {
  method: string;
  path: string;
  /** The Bearer key matched (always true when the simulator has no key). */
  authorized: boolean;
  /** Names of the request's headers, lower case, in order. */
  headerNames: string[];
  status?: number;
}

/**
 * The server every simulator of an OpenAI-compatible API runs on 127.0.0.1: listening and stopping, the record of
 * each request, the checks OpenAI makes before it reads a request (URL, method, key, body size, JSON) and its error
 * shape. A simulator adds its endpoint: what it records (`record`) and how it answers (`answer`). Uses node:http only.
 */
export abstract class OpenAiSimServer<E extends SimRequestBase> {
  readonly requests: E[] = [];
  private readonly timers = new Set<NodeJS.Timeout>();
  private server: Server | null = null;
  private apiKey: Buffer | undefined;

  /** `kind` names the simulator in errors ("chat", "speech" …). */
  protected constructor(
    private readonly kind: string,
    protected readonly maxBodyBytes: number,
  ) {}

  /** The server's origin, e.g. http://127.0.0.1:40123. */
  get url(): string {
    const address = this.server?.address() as AddressInfo | null | undefined;
    if (!address) throw new Error(`the ${this.kind} simulator is not listening`);
    return `http://127.0.0.1:${address.port}`;
  }

  /** The API root a client is given (the SDK's baseURL). */
  get baseUrl(): string {
    return `${this.url}/v1`;
  }

  async stop(): Promise<void> {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    const server = this.server;
    this.server = null;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Each simulator's start() takes its key its own way; without one, any or no Authorization is accepted. */
  protected async listen(port: number | undefined, apiKey: string | undefined): Promise<void> {
    this.apiKey = apiKey === undefined ? undefined : Buffer.from(`Bearer ${apiKey}`);
    const server = createServer((req, res) => void this.handle(req, res));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port ?? 0, '127.0.0.1', () => resolve());
    });
  }

  /** The entry recorded for a request: `common` plus the simulator's own fields at their starting values. */
  protected abstract record(common: SimRequestBase, res: ServerResponse): E;

  protected abstract answer(req: IncomingMessage, res: ServerResponse, entry: E): Promise<void>;

  /** Called once an answer from error() or json() has been written; a simulator that records completion sets it here. */
  protected written(entry: E): void {
    void entry;
  }

  /**
   * Answers 404 for another path, 405 (with Allow) for another method, 401 for a wrong key, reading nothing of the
   * body; true when it has answered.
   */
  protected guard(req: IncomingMessage, res: ServerResponse, entry: E, endpoint: { path: string; method: string }): boolean {
    if (entry.path !== endpoint.path) {
      req.resume();
      this.error(res, entry, 404, `Invalid URL (${entry.method} ${entry.path})`, 'invalid_request_error');
      return true;
    }
    if (entry.method !== endpoint.method) {
      req.resume();
      res.setHeader('allow', endpoint.method);
      this.error(res, entry, 405, `Method ${entry.method} is not allowed`, 'invalid_request_error');
      return true;
    }
    if (!entry.authorized) {
      req.resume();
      this.error(res, entry, 401, 'Incorrect API key provided.', 'invalid_request_error', 'invalid_api_key');
      return true;
    }
    return false;
  }

  /** The body, or null once 413 has been answered (and the connection is closed: the rest is not read). */
  protected async readBody(req: IncomingMessage, res: ServerResponse, entry: E): Promise<Buffer | null> {
    const raw = await readCappedBody(req, this.maxBodyBytes);
    if (raw === null) {
      res.setHeader('connection', 'close');
      this.error(res, entry, 413, `The request body is over ${this.maxBodyBytes} bytes`, 'invalid_request_error');
    }
    return raw;
  }

  /** The body as a JSON object, or null once 413 or 400 has been answered. */
  protected async readJson(req: IncomingMessage, res: ServerResponse, entry: E): Promise<Record<string, unknown> | null> {
    const raw = await this.readBody(req, res, entry);
    if (raw === null) return null;
    try {
      const parsed: unknown = JSON.parse(raw.toString('utf8'));
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object');
      return parsed as Record<string, unknown>;
    } catch {
      this.error(res, entry, 400, 'We could not parse the JSON body of your request.', 'invalid_request_error');
      return null;
    }
  }

  /** A scripted failure, with the type, code and (unless `message` is given) the message OpenAI sends for `status`. */
  protected simulatedError(res: ServerResponse, entry: E, status: number, message?: string): void {
    if (status === 429) {
      this.error(res, entry, 429, message ?? 'Rate limit reached for requests. Please try again shortly.', 'requests', 'rate_limit_exceeded');
    } else if (status === 401) {
      this.error(res, entry, 401, message ?? 'Incorrect API key provided.', 'invalid_request_error', 'invalid_api_key');
    } else if (status >= 500) {
      this.error(res, entry, status, message ?? 'The server had an error while processing your request. Sorry about that!', 'server_error');
    } else {
      this.error(res, entry, status, message ?? `Simulated error ${status}`, 'invalid_request_error');
    }
  }

  /** An error in OpenAI's shape. */
  protected error(res: ServerResponse, entry: E, status: number, message: string, type: string, code: string | null = null, param: string | null = null): void {
    this.json(res, entry, status, { error: { message, type, param, code } });
  }

  protected json(res: ServerResponse, entry: E, status: number, value: unknown, onWritten?: () => void): void {
    entry.status = status;
    const body = JSON.stringify(value);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body, () => {
      onWritten?.();
      this.written(entry);
    });
  }

  /** Waits `ms`, or less when the client leaves or the simulator stops. */
  protected sleep(ms: number, res: ServerResponse): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.timers.delete(timer);
        res.off('close', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.timers.add(timer);
      res.on('close', done);
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const entry = this.record(
      {
        method: req.method ?? '',
        path: (req.url ?? '').split('?')[0],
        authorized: this.apiKey === undefined || bearerMatches(req.headers.authorization, this.apiKey),
        headerNames: req.rawHeaders.filter((_, i) => i % 2 === 0).map((name) => name.toLowerCase()),
      },
      res,
    );
    this.requests.push(entry);
    try {
      await this.answer(req, res, entry);
    } catch {
      if (!res.headersSent) this.error(res, entry, 500, 'The server had an error while processing your request.', 'server_error');
      else res.destroy();
    }
  }
}
