/**
 * A customer's relay server, scripted, for tests and the embedded demo: a real WebSocket server (127.0.0.1, a free
 * port by default) speaking the relay protocol's customer side (src/channels/voice/agents/relay/relay-protocol.ts). It
 * checks Ferry's X-Ferry-Signature when given the secret (as a customer's server should), records every frame each
 * connection receives, and answers by rules: a prompt's text (or a key, or the setup) picks a reply whose steps stream
 * text token by token with small gaps, play audio, send keys, end the call, wait, send raw bytes or close the socket.
 * Like a well-behaved customer it stops the reply in progress when Ferry sends an interrupt (unless told not to).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';

export type RelaySignatureCheck = { ok: true } | { ok: false; reason: string };

/**
 * Checks Ferry's X-Ferry-Signature as docs/voice-agents.md tells a customer to: HMAC-SHA256 keyed with the base64 after
 * whsec_, over "<X-Ferry-Timestamp>.<the URL>", any one v1 signature matching, the timestamp within 5 minutes. Written
 * here from the documentation, not shared with Ferry's signing code, so a test catches the two drifting apart.
 */
export function checkFerrySignature(secrets: readonly string[], headers: IncomingMessage['headers'], url: string, nowSeconds = Math.floor(Date.now() / 1000)): RelaySignatureCheck {
  const header = (name: string): string | undefined => {
    const v = headers[name];
    return Array.isArray(v) ? v[0] : v;
  };
  const signature = header('x-ferry-signature');
  const timestamp = header('x-ferry-timestamp');
  if (!signature) return { ok: false, reason: 'no X-Ferry-Signature header' };
  if (!timestamp || !/^[0-9]+$/.test(timestamp)) return { ok: false, reason: 'no valid X-Ferry-Timestamp header' };
  if (Math.abs(nowSeconds - Number(timestamp)) > 300) return { ok: false, reason: 'the timestamp is too old or too new' };
  const given = signature.split(' ').map((s) => Buffer.from(s));
  for (const secret of secrets) {
    const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
    const expected = Buffer.from('v1,' + createHmac('sha256', key).update(`${timestamp}.${url}`).digest('base64'));
    if (given.some((g) => g.length === expected.length && timingSafeEqual(g, expected))) return { ok: true };
  }
  return { ok: false, reason: 'the signature does not match' };
}

export type RelayReplyStep =
  /** Streamed as word tokens (`gapMs` apart, default the server's tokenGapMs), the final one with last: true. */
  | { say: string; gapMs?: number; last?: boolean }
  /** These tokens exactly, one frame each; the final one with `last` (default true). */
  | { tokens: string[]; gapMs?: number; last?: boolean }
  | { play: string; loop?: number }
  | { digits: string }
  /** Ends the call, with this handoffData (omitted when undefined). */
  | { end: Record<string, unknown> | string | null | undefined }
  | { wait: number }
  /** Sent as is: a text frame for a string, a binary one for a Buffer (to try Ferry with what it must ignore). */
  | { raw: string | Buffer }
  | { close: number };

export type RelayReply = RelayReplyStep[] | ((text: string) => RelayReplyStep[]);

export interface RelayRule {
  /** A prompt whose voicePrompt contains this (case-insensitive), or matches this expression. */
  prompt?: string | RegExp;
  /** A dtmf frame of this digit. */
  dtmf?: string;
  /** The setup frame (a greeting from the customer's model). */
  setup?: true;
  reply: RelayReply;
}

export interface RelayCustomerOptions {
  /** Tried in order; the first that matches answers. */
  rules?: RelayRule[];
  /** The answer to a prompt no rule matches (default none: silence). */
  fallback?: RelayReply;
  /** Check X-Ferry-Signature with these secrets; each connection records the result. */
  secrets?: string[];
  /** With secrets: refuse the upgrade (401) when the signature does not verify. Default false (only recorded). */
  rejectBadSignature?: boolean;
  /** Between streamed tokens. Default 2 ms. */
  tokenGapMs?: number;
  /** Stop the reply in progress on an interrupt frame. Default true. */
  stopOnInterrupt?: boolean;
  /** Answer Ferry's pings. Default true (false: a server that hangs without closing). */
  answerPings?: boolean;
  host?: string;
  port?: number;
}

/** Echoes the caller (the embedded demo's fallback): nothing to configure, and the conversation is visibly relayed. */
export const echoReply: RelayReply = (text) => [{ say: `You said: ${text}.` }];

const MAX_RECORDED_FRAMES = 1000;
const MAX_GAP_MS = 10_000;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, Math.min(Math.max(0, ms), MAX_GAP_MS)));

export class RelayCustomerConnection extends EventEmitter<{ frame: [Record<string, unknown>]; close: [number] }> {
  /** Frames received from Ferry, parsed (the newest 1,000); text that was no JSON object is kept as {raw}. */
  readonly received: Record<string, unknown>[] = [];
  /** Frames this side sent, as sent. */
  readonly sent: (string | Buffer)[] = [];
  /** The result of checking the signature; null when the server was given no secret. */
  readonly signature: RelaySignatureCheck | null;
  readonly headers: IncomingMessage['headers'];
  /** The path and query the connection was made to. */
  readonly path: string;
  closeCode: number | null = null;
  /** Pings received from Ferry. */
  pings = 0;
  /** Whether a reply is streaming. */
  replying = false;
  private generation = 0;
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly ws: WebSocket,
    req: IncomingMessage,
    signature: RelaySignatureCheck | null,
    private readonly server: RelayCustomer,
  ) {
    super();
    this.signature = signature;
    this.headers = req.headers;
    this.path = req.url ?? '/';
    ws.on('message', (data, isBinary) => {
      if (isBinary) return;
      let frame: Record<string, unknown>;
      try {
        const parsed: unknown = JSON.parse(String(data));
        frame = parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : { raw: String(data) };
      } catch {
        frame = { raw: String(data) };
      }
      if (this.received.length >= MAX_RECORDED_FRAMES) this.received.shift();
      this.received.push(frame);
      this.react(frame);
      this.emit('frame', frame);
    });
    ws.on('close', (code) => {
      this.closeCode = code;
      this.generation++;
      this.emit('close', code);
    });
    ws.on('ping', () => this.pings++);
    ws.on('error', () => undefined);
  }

  /** The frames of one type received so far. */
  framesOf(type: string): Record<string, unknown>[] {
    return this.received.filter((f) => f.type === type);
  }

  /** Resolves with the n-th (1-based) frame of this type once it has come; rejects after limitMs. */
  waitForFrame(type: string, n = 1, limitMs = 5000): Promise<Record<string, unknown>> {
    return new Promise((resolve, reject) => {
      const check = (): boolean => {
        const f = this.framesOf(type)[n - 1];
        if (!f) return false;
        cleanup();
        resolve(f);
        return true;
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`no ${type} frame #${n} within ${limitMs} ms (received: ${this.received.map((f) => f.type ?? 'raw').join(', ')})`));
      }, limitMs);
      const cleanup = (): void => {
        clearTimeout(timer);
        this.off('frame', check);
      };
      if (!check()) this.on('frame', check);
    });
  }

  /** Resolves with the close code once the socket closed; rejects after limitMs. */
  waitForClose(limitMs = 5000): Promise<number> {
    if (this.closeCode !== null) return Promise.resolve(this.closeCode);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the relay socket did not close within ${limitMs} ms`)), limitMs);
      this.once('close', (code) => {
        clearTimeout(timer);
        resolve(code);
      });
    });
  }

  /** Resolves once every reply queued so far has been sent (or stopped). */
  idle(): Promise<void> {
    return this.chain;
  }

  /** Sends a frame now (outside any rule). */
  send(frame: Record<string, unknown>): void {
    this.sendRaw(JSON.stringify(frame));
  }

  sendRaw(data: string | Buffer): void {
    if (this.ws.readyState !== this.ws.OPEN) return;
    this.sent.push(data);
    this.ws.send(data, { binary: Buffer.isBuffer(data) });
  }

  /** Runs reply steps after those already queued. */
  reply(steps: RelayReplyStep[]): Promise<void> {
    const generation = this.generation;
    this.chain = this.chain.then(() => this.run(steps, generation)).catch(() => undefined);
    return this.chain;
  }

  close(code = 1000): void {
    this.ws.close(code);
  }

  /** Cuts the TCP connection with no close frame (a crashed server). */
  terminate(): void {
    this.ws.terminate();
  }

  private react(frame: Record<string, unknown>): void {
    if (frame.type === 'interrupt' && this.server.stopOnInterrupt) {
      this.generation++;
      return;
    }
    const steps = this.server.replyTo(frame);
    if (steps) void this.reply(steps);
  }

  private async run(steps: RelayReplyStep[], generation: number): Promise<void> {
    const live = (): boolean => generation === this.generation && this.ws.readyState === this.ws.OPEN;
    this.replying = true;
    try {
      for (const step of steps) {
        if (!live()) return;
        if ('say' in step || 'tokens' in step) {
          const tokens = 'say' in step ? (step.say.match(/\S+\s*/g) ?? ['']) : step.tokens.length ? step.tokens : [''];
          const gap = step.gapMs ?? this.server.tokenGapMs;
          for (let i = 0; i < tokens.length; i++) {
            if (!live()) return;
            const last = i === tokens.length - 1 ? step.last ?? true : false;
            this.send({ type: 'text', token: tokens[i], last });
            if (!last && gap > 0) await sleep(gap);
          }
        } else if ('play' in step) this.send({ type: 'play', source: step.play, ...(step.loop !== undefined ? { loop: step.loop } : {}) });
        else if ('digits' in step) this.send({ type: 'sendDigits', digits: step.digits });
        else if ('end' in step) this.send({ type: 'end', ...(step.end !== undefined ? { handoffData: step.end } : {}) });
        else if ('wait' in step) await sleep(step.wait);
        else if ('raw' in step) this.sendRaw(step.raw);
        else if ('close' in step) this.close(step.close);
      }
    } finally {
      this.replying = false;
    }
  }
}

export class RelayCustomer {
  readonly connections: RelayCustomerConnection[] = [];
  readonly tokenGapMs: number;
  readonly stopOnInterrupt: boolean;
  /** Upgrades refused because the signature did not verify. */
  refused = 0;
  private http: Server | undefined;
  private wss: WebSocketServer | undefined;
  private readonly arrivals = new EventEmitter<{ connection: [RelayCustomerConnection] }>();

  constructor(private readonly o: RelayCustomerOptions = {}) {
    this.tokenGapMs = o.tokenGapMs ?? 2;
    this.stopOnInterrupt = o.stopOnInterrupt ?? true;
  }

  /** Listens; resolves with the ws:// URL to give an agent as relay.url. */
  async start(): Promise<string> {
    const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, maxPayload: 1024 * 1024, autoPong: this.o.answerPings ?? true });
    const http = createServer((_req, res) => res.writeHead(426, { 'content-type': 'text/plain' }).end('a WebSocket server\n'));
    http.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => this.upgrade(wss, req, socket, head));
    this.wss = wss;
    this.http = http;
    await new Promise<void>((resolve, reject) => {
      http.once('error', reject);
      http.listen(this.o.port ?? 0, this.o.host ?? '127.0.0.1', () => resolve());
    });
    return this.url;
  }

  get url(): string {
    const a = this.http?.address() as AddressInfo | null;
    if (!a) throw new Error('the relay customer is not listening');
    return `ws://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}/relay`;
  }

  /** The n-th (1-based) connection, once made; rejects after limitMs. */
  connection(n = 1, limitMs = 5000): Promise<RelayCustomerConnection> {
    const have = this.connections[n - 1];
    if (have) return Promise.resolve(have);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.arrivals.off('connection', on);
        reject(new Error(`no relay connection #${n} within ${limitMs} ms`));
      }, limitMs);
      const on = (): void => {
        const c = this.connections[n - 1];
        if (!c) return;
        clearTimeout(timer);
        this.arrivals.off('connection', on);
        resolve(c);
      };
      this.arrivals.on('connection', on);
    });
  }

  /** The steps answering a frame from Ferry, by the first matching rule; undefined when none answers. */
  replyTo(frame: Record<string, unknown>): RelayReplyStep[] | undefined {
    const stepsOf = (reply: RelayReply, text: string): RelayReplyStep[] => (typeof reply === 'function' ? reply(text) : reply);
    const rules = this.o.rules ?? [];
    if (frame.type === 'setup') {
      const rule = rules.find((r) => r.setup);
      return rule && stepsOf(rule.reply, '');
    }
    if (frame.type === 'dtmf') {
      const rule = rules.find((r) => r.dtmf !== undefined && r.dtmf === frame.digit);
      return rule && stepsOf(rule.reply, String(frame.digit));
    }
    if (frame.type === 'prompt') {
      const text = typeof frame.voicePrompt === 'string' ? frame.voicePrompt : '';
      const rule = rules.find((r) => r.prompt !== undefined && (typeof r.prompt === 'string' ? text.toLowerCase().includes(r.prompt.toLowerCase()) : r.prompt.test(text)));
      if (rule) return stepsOf(rule.reply, text);
      return this.o.fallback && stepsOf(this.o.fallback, text);
    }
    return undefined;
  }

  async stop(): Promise<void> {
    for (const c of this.connections) c.terminate();
    this.wss?.close();
    const http = this.http;
    this.http = undefined;
    if (http) await new Promise<void>((resolve) => http.close(() => resolve()));
  }

  private upgrade(wss: WebSocketServer, req: IncomingMessage, socket: Duplex, head: Buffer): void {
    let signature: RelaySignatureCheck | null = null;
    if (this.o.secrets?.length) {
      // The URL Ferry signed, rebuilt from the request as a customer's server behind no proxy would.
      signature = checkFerrySignature(this.o.secrets, req.headers, `ws://${req.headers.host ?? ''}${req.url ?? '/'}`);
      if (!signature.ok && this.o.rejectBadSignature) {
        this.refused++;
        socket.end('HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
        return;
      }
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      const c = new RelayCustomerConnection(ws, req, signature, this);
      this.connections.push(c);
      this.arrivals.emit('connection', c);
    });
  }
}
