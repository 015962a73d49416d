import type { LookupAddress, LookupOptions } from 'node:dns';
import { lookup as dnsLookup } from 'node:dns/promises';
import http, { type AgentOptions, type ClientRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import https from 'node:https';
import { isIPv4, isIPv6 } from 'node:net';

// The one HTTP client for URLs a customer gave (webhooks, USSD apps, media links): every address a name resolves to is
// checked against the SSRF policy, the connection goes to a checked address (so a name that changes between check and
// connection cannot lead elsewhere), no redirect is followed, and time and body size are bounded. A core module: it
// knows no product; callers pass the policy and map its errors to their own codes.

export interface ResolvedAddress {
  address: string;
  family: number;
}

export type Lookup = (host: string) => Promise<ResolvedAddress[]>;

/** Why a request was refused or failed; callers map `kind` to their own error codes. */
export type GuardedHttpErrorKind = 'INVALID_URL' | 'TARGET_BLOCKED' | 'DNS_FAILED' | 'TIMEOUT' | 'TOO_LARGE' | 'CONNECTION_REFUSED' | 'CONNECTION_FAILED';

export class GuardedHttpError extends Error {
  override readonly name = 'GuardedHttpError';
  constructor(
    readonly kind: GuardedHttpErrorKind,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// Addresses

/**
 * `public`: a target. `private`: loopback, private, CGNAT, unique-local: a target only where private targets are
 * allowed (a developer's machine). `blocked`: never a target, whatever the policy: link-local (cloud metadata),
 * multicast, reserved, documentation, and the IPv6 forms that tunnel to an arbitrary IPv4 address.
 */
export type AddressVerdict = 'public' | 'private' | 'blocked';

/** `embedded`: an IPv6 prefix whose last 32 bits are an IPv4 address, judged as that address. */
type Rule = [prefix: string, bits: number, verdict: AddressVerdict | 'embedded', why: string];

// Most specific first: the first rule that matches decides.
const IPV4_RULES: Rule[] = [
  ['0.0.0.0', 8, 'private', '"this network"'],
  ['10.0.0.0', 8, 'private', 'private'],
  ['100.64.0.0', 10, 'private', 'shared (CGNAT)'],
  ['127.0.0.0', 8, 'private', 'loopback'],
  ['169.254.0.0', 16, 'blocked', 'link-local (cloud metadata)'],
  ['172.16.0.0', 12, 'private', 'private'],
  ['192.0.0.0', 24, 'blocked', 'reserved (IETF protocol assignments)'],
  ['192.0.2.0', 24, 'blocked', 'documentation'],
  ['192.88.99.0', 24, 'blocked', 'reserved (6to4 relay)'],
  ['192.168.0.0', 16, 'private', 'private'],
  ['198.18.0.0', 15, 'private', 'benchmarking'],
  ['198.51.100.0', 24, 'blocked', 'documentation'],
  ['203.0.113.0', 24, 'blocked', 'documentation'],
  ['224.0.0.0', 4, 'blocked', 'multicast'],
  ['240.0.0.0', 4, 'blocked', 'reserved'],
];

const IPV6_RULES: Rule[] = [
  ['::', 128, 'private', 'unspecified'],
  ['::1', 128, 'private', 'loopback'],
  ['::ffff:0:0', 96, 'embedded', 'IPv4-mapped'],
  ['::ffff:0:0:0', 96, 'blocked', 'IPv4-translated'],
  ['::', 96, 'blocked', 'IPv4-compatible (deprecated)'],
  ['64:ff9b::', 96, 'embedded', 'NAT64'],
  ['64:ff9b:1::', 48, 'blocked', 'local-use NAT64'],
  ['100::', 64, 'blocked', 'discard-only'],
  ['2001::', 32, 'blocked', 'Teredo'],
  ['2001:db8::', 32, 'blocked', 'documentation'],
  ['2002::', 16, 'blocked', '6to4'],
  ['fd00:ec2::254', 128, 'blocked', 'cloud metadata'],
  ['fc00::', 7, 'private', 'unique-local'],
  ['fe80::', 10, 'blocked', 'link-local'],
  ['fec0::', 10, 'private', 'site-local (deprecated)'],
  ['ff00::', 8, 'blocked', 'multicast'],
];

function ipv4Bytes(address: string): number[] | null {
  return isIPv4(address) ? address.split('.').map(Number) : null;
}

/** The 16 bytes of an IPv6 address in any spelling (compressed, a dotted IPv4 tail, a zone); null if not one. */
export function ipv6Bytes(address: string): number[] | null {
  let text = address.replace(/%.*$/, '');
  if (!isIPv6(text)) return null;
  const tail = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (tail) {
    const [a, b, c, d] = tail.slice(1).map(Number);
    text = text.slice(0, tail.index) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, rest] = text.split('::');
  const h = head ? head.split(':') : [];
  const r = rest ? rest.split(':') : [];
  const groups = rest === undefined ? h : [...h, ...new Array<string>(8 - h.length - r.length).fill('0'), ...r];
  if (groups.length !== 8) return null;
  return groups.flatMap((g) => {
    const n = parseInt(g, 16);
    return [n >> 8, n & 0xff];
  });
}

function matches(bytes: number[], prefix: number[], bits: number): boolean {
  for (let i = 0; i < bits; i += 8) {
    const take = Math.min(8, bits - i);
    const mask = (0xff << (8 - take)) & 0xff;
    if ((bytes[i / 8] & mask) !== (prefix[i / 8] & mask)) return false;
  }
  return true;
}

const V4 = IPV4_RULES.map(([p, bits, verdict, why]) => ({ prefix: ipv4Bytes(p)!, bits, verdict, why }));
const V6 = IPV6_RULES.map(([p, bits, verdict, why]) => ({ prefix: ipv6Bytes(p)!, bits, verdict, why }));

function judgeBytes(bytes: number[], rules: typeof V4): { verdict: AddressVerdict; why: string } {
  for (const r of rules) {
    if (!matches(bytes, r.prefix, r.bits)) continue;
    if (r.verdict !== 'embedded') return { verdict: r.verdict, why: r.why };
    const inner = judgeBytes(bytes.slice(12), V4);
    return { verdict: inner.verdict, why: `${r.why} ${inner.why}` };
  }
  return { verdict: 'public', why: 'public' };
}

/** What an IP address is as a target (an IPv4 address embedded in IPv6 is judged as that IPv4 address). */
export function judgeAddress(address: string): { verdict: AddressVerdict; why: string } {
  const v4 = ipv4Bytes(address);
  if (v4) return judgeBytes(v4, V4);
  const v6 = ipv6Bytes(address);
  if (v6) return judgeBytes(v6, V6);
  return { verdict: 'blocked', why: 'not an IP address' };
}

/** Why the policy refuses an address, or null when it is a target. */
export function addressRefusal(address: string, allowPrivateTargets: boolean): string | null {
  const { verdict, why } = judgeAddress(address);
  if (verdict === 'blocked') return `the target is a link-local (cloud metadata), multicast or reserved address, never allowed (${why})`;
  if (verdict === 'private' && !allowPrivateTargets) return `the target is a private, loopback or reserved address (${why})`;
  return null;
}

// ---------------------------------------------------------------------------------------------------------------------
// Names

export interface TargetPolicy {
  /** Loopback and private ranges are targets too (a developer's machine); the blocked ranges never are. */
  allowPrivateTargets: boolean;
  /** Plain http refused. */
  httpsOnly: boolean;
}

/** A name's answer is used this long before it is resolved again. */
const CACHE_MS = 5000;
/** Names kept; past this the cache starts over. */
const MAX_CACHED = 10_000;

/**
 * The policy applied to URLs: scheme, no credentials, and every address the name resolves to. A name's addresses are
 * kept for `cacheMs` (failures are not kept), so a name that later points inside is refused within seconds, and a
 * busy target is not resolved on every request (dns.lookup runs on libuv's small thread pool).
 */
export class GuardedResolver {
  private readonly cache = new Map<string, { at: number; addresses: ResolvedAddress[] }>();
  private readonly lookup: Lookup;
  private readonly cacheMs: number;
  private readonly clock: () => number;

  constructor(
    readonly policy: TargetPolicy,
    o: { lookup?: Lookup; cacheMs?: number; clock?: () => number } = {},
  ) {
    this.lookup = o.lookup ?? ((host) => dnsLookup(host, { all: true, verbatim: true }));
    this.cacheMs = o.cacheMs ?? CACHE_MS;
    this.clock = o.clock ?? Date.now;
  }

  /** The URL and its addresses, every one allowed; throws GuardedHttpError (INVALID_URL, DNS_FAILED, TARGET_BLOCKED). */
  async resolve(target: string | URL): Promise<{ url: URL; addresses: ResolvedAddress[] }> {
    let url: URL;
    try {
      url = new URL(target);
    } catch {
      throw new GuardedHttpError('INVALID_URL', 'not a valid URL');
    }
    if (url.protocol !== 'https:' && (url.protocol !== 'http:' || this.policy.httpsOnly)) throw new GuardedHttpError('INVALID_URL', 'only https URLs are accepted');
    if (url.username || url.password) throw new GuardedHttpError('INVALID_URL', 'credentials in the URL are not accepted');
    const host = url.hostname.replace(/^\[|\]$/g, '');
    let addresses: ResolvedAddress[];
    if (isIPv4(host)) addresses = [{ address: host, family: 4 }];
    else if (isIPv6(host)) addresses = [{ address: host, family: 6 }];
    else {
      try {
        addresses = await this.resolveName(host);
      } catch (err) {
        throw new GuardedHttpError('DNS_FAILED', `host ${host} does not resolve`, { cause: err });
      }
      if (!addresses.length) throw new GuardedHttpError('DNS_FAILED', `host ${host} does not resolve`);
    }
    // Every address: a name answering one public and one private address must not reach the private one.
    for (const a of addresses) {
      const refused = addressRefusal(a.address, this.policy.allowPrivateTargets);
      if (refused) throw new GuardedHttpError('TARGET_BLOCKED', refused);
    }
    return { url, addresses };
  }

  private async resolveName(host: string): Promise<ResolvedAddress[]> {
    const now = this.clock();
    const hit = this.cache.get(host);
    if (hit && now - hit.at < this.cacheMs) return hit.addresses;
    const addresses = (await this.lookup(host)).map((a) => ({ address: a.address, family: a.family }));
    if (this.cache.size >= MAX_CACHED && !this.cache.has(host)) this.cache.clear();
    this.cache.set(host, { at: now, addresses });
    return addresses;
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// Requests

export interface GuardedRequest {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** The whole exchange: resolving the name, connecting, sending, and the answer's last byte. */
  timeoutMs: number;
  /** Establishing a new connection (TCP, and TLS for https); at most timeoutMs. */
  connectTimeoutMs?: number;
  /** Bytes of the answer's body read at most, counted as they arrive whatever Content-Length says. */
  maxBytes: number;
  /** Ends the exchange early, at any point: it fails (or the body's reading throws) with the signal's reason. */
  signal?: AbortSignal;
}

export interface GuardedResponse {
  status: number;
  headers: IncomingHttpHeaders;
  /** The body as read (at most keepBytes of it). */
  body: Buffer;
  /** Body bytes read. */
  bytes: number;
  /** False when the body was cut (past maxBytes, or closed early by the peer) in `overflow: 'cut'` mode. */
  complete: boolean;
}

/** An answer whose body is read by the caller (e.g. only its first bytes): call close() when done with it. */
export interface GuardedStream {
  status: number;
  headers: IncomingHttpHeaders;
  /**
   * The body, bounded: throws GuardedHttpError TOO_LARGE past maxBytes, TIMEOUT past the deadline (the signal's reason
   * once it fired); closes at the end.
   */
  chunks(): AsyncGenerator<Buffer>;
  /** Stops reading (the connection is not reused) and ends the deadline. */
  close(): void;
}

export interface GuardedHttpOptions {
  /** The policy and its name cache (possibly shared with other clients under the same policy). */
  resolver: GuardedResolver;
  /** Extra CA certificates trusted (PEM), besides the system's. */
  ca?: string | null;
  /** Settings of the client's own agents (never the global ones, whose pooled connections no guard checked). */
  agent?: AgentOptions & { scheduling?: 'fifo' | 'lifo' };
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** A `lookup` for net.connect answering only checked addresses: all of them when asked for all (Node 20's default). */
function pinnedLookup(addresses: ResolvedAddress[]): (host: string, options: LookupOptions, callback: LookupCallback) => void {
  return (_host, options, callback) => {
    const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : options.family;
    const fit = family === 4 || family === 6 ? addresses.filter((a) => a.family === family) : addresses;
    if (!fit.length) return callback(Object.assign(new Error('no checked address of the requested family'), { code: 'ENOTFOUND' }), options.all ? [] : '', 0);
    if (options.all) callback(null, fit.map((a) => ({ address: a.address, family: a.family })));
    else callback(null, fit[0].address, fit[0].family);
  };
}

function asGuardedError(err: unknown): GuardedHttpError {
  if (err instanceof GuardedHttpError) return err;
  const e = err as NodeJS.ErrnoException;
  if (e?.code === 'ECONNREFUSED') return new GuardedHttpError('CONNECTION_REFUSED', `connection refused (${e.message})`, { cause: err });
  if (e?.code === 'ECONNRESET' && e.message === 'aborted') return new GuardedHttpError('CONNECTION_FAILED', 'the answer was cut short', { cause: err });
  return new GuardedHttpError('CONNECTION_FAILED', e?.message ?? String(err), { cause: err });
}

/**
 * One timer for a whole exchange, and the caller's signal; what they end changes as the exchange goes on (lookup,
 * request, response).
 */
class Deadline {
  expired = false;
  /** The caller's signal fired: its reason is the exchange's error. */
  private aborted: { reason: unknown } | null = null;
  private onExpire: (err: Error) => void = () => undefined;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly ms: number,
    private readonly signal?: AbortSignal,
  ) {
    this.timer = setTimeout(() => {
      this.expired = true;
      this.onExpire(new GuardedHttpError('TIMEOUT', `timed out after ${this.ms} ms`));
    }, ms);
    signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  private readonly onAbort = (): void => {
    this.aborted = { reason: this.signal?.reason };
    this.onExpire(this.failure());
  };

  get stopped(): boolean {
    return this.expired || this.aborted !== null;
  }

  /** What the exchange fails with: the signal's reason, the timeout, or `err` as a GuardedHttpError. */
  failure(err?: unknown): Error {
    if (this.aborted) return this.aborted.reason as Error;
    if (this.expired) return new GuardedHttpError('TIMEOUT', `timed out after ${this.ms} ms`);
    return asGuardedError(err);
  }

  whenExpired(onExpire: (err: Error) => void): void {
    this.onExpire = onExpire;
  }

  race<T>(p: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.onExpire = reject;
      p.then(resolve, reject);
    });
  }

  clear(): void {
    clearTimeout(this.timer);
    this.signal?.removeEventListener('abort', this.onAbort);
    this.onExpire = () => undefined;
  }
}

/**
 * The guarded client: resolve (GuardedResolver), connect to a checked address (TLS still verifies the URL's name), send,
 * read a bounded answer. Redirects are not followed: a 3xx is an answer like any other.
 */
export class GuardedHttp {
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;

  constructor(private readonly o: GuardedHttpOptions) {
    const agent = o.agent ?? { keepAlive: false };
    this.httpAgent = new http.Agent(agent);
    this.httpsAgent = new https.Agent(agent);
  }

  get policy(): TargetPolicy {
    return this.o.resolver.policy;
  }

  /** The URL as the policy accepts it, with its checked addresses; throws GuardedHttpError. */
  check(target: string | URL): Promise<{ url: URL; addresses: ResolvedAddress[] }> {
    return this.o.resolver.resolve(target);
  }

  /** The answer's status and headers, with the request's deadline still running (cleared here if it never came). */
  private async started(target: string | URL, r: GuardedRequest): Promise<{ res: IncomingMessage; deadline: Deadline }> {
    r.signal?.throwIfAborted();
    const deadline = new Deadline(r.timeoutMs, r.signal);
    try {
      return { res: await this.open0(target, r, deadline), deadline };
    } catch (err) {
      deadline.clear();
      throw err;
    }
  }

  /** Sends and reads the whole answer (bounded). overflow 'cut': a body past maxBytes or cut short still answers. */
  async request(target: string | URL, r: GuardedRequest & { overflow?: 'error' | 'cut'; keepBytes?: number }): Promise<GuardedResponse> {
    const { res, deadline } = await this.started(target, r);
    const cut = r.overflow === 'cut';
    const keep = r.keepBytes ?? r.maxBytes;
    return new Promise<GuardedResponse>((resolve, reject) => {
      const kept: Buffer[] = [];
      let keptBytes = 0;
      let bytes = 0;
      let done = false;
      const finish = (complete: boolean): void => {
        if (done) return;
        done = true;
        deadline.clear();
        if (!complete) res.destroy();
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: kept.length === 1 ? kept[0] : Buffer.concat(kept), bytes, complete });
      };
      const fail = (err: unknown): void => {
        if (done) return;
        done = true;
        const failure = deadline.failure(err);
        deadline.clear();
        res.destroy();
        reject(failure);
      };
      // A body cut short (too long, or closed by the peer) still carried its status in 'cut' mode; a timeout or an
      // abort never answers.
      const ended = (err?: unknown): void => {
        if (deadline.stopped || !cut) fail(err ?? new GuardedHttpError('CONNECTION_FAILED', 'the answer was cut short'));
        else finish(false);
      };
      if (!cut && Number(res.headers['content-length']) > r.maxBytes) return fail(new GuardedHttpError('TOO_LARGE', `the answer is over ${r.maxBytes} bytes`));
      res.on('data', (chunk: Buffer) => {
        if (done) return;
        bytes += chunk.length;
        if (bytes > r.maxBytes) {
          bytes -= chunk.length;
          if (cut) return finish(false);
          return fail(new GuardedHttpError('TOO_LARGE', `the answer is over ${r.maxBytes} bytes`));
        }
        if (keptBytes < keep) {
          const part = keptBytes + chunk.length <= keep ? chunk : chunk.subarray(0, keep - keptBytes);
          kept.push(part);
          keptBytes += part.length;
        }
      });
      res.once('end', () => finish(true));
      res.on('error', ended);
      res.once('close', () => ended());
    });
  }

  /** Sends and answers once the status and headers are in; the caller reads the body with chunks() and must close(). */
  async open(target: string | URL, r: GuardedRequest): Promise<GuardedStream> {
    const { res, deadline } = await this.started(target, r);
    const close = (): void => {
      deadline.clear();
      if (!res.complete) res.destroy();
    };
    return {
      status: res.statusCode ?? 0,
      headers: res.headers,
      close,
      async *chunks(): AsyncGenerator<Buffer> {
        try {
          if (Number(res.headers['content-length']) > r.maxBytes) throw new GuardedHttpError('TOO_LARGE', `the answer is over ${r.maxBytes} bytes`);
          let bytes = 0;
          for await (const chunk of res as AsyncIterable<Buffer>) {
            bytes += chunk.length;
            if (bytes > r.maxBytes) throw new GuardedHttpError('TOO_LARGE', `the answer is over ${r.maxBytes} bytes`);
            yield chunk;
          }
        } catch (err) {
          throw deadline.failure(err);
        } finally {
          close();
        }
      },
    };
  }

  /** Closes idle connections (at shutdown). */
  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }

  /** Resolves, checks, connects to a checked address and sends; answers with the response (its body unread). */
  private async open0(target: string | URL, r: GuardedRequest, deadline: Deadline): Promise<IncomingMessage> {
    const { url, addresses } = await deadline.race(this.o.resolver.resolve(target));
    return new Promise<IncomingMessage>((resolve, reject) => {
      const secure = url.protocol === 'https:';
      const headers: Record<string, string> = { ...r.headers };
      if (r.body !== undefined) headers['content-length'] = String(Buffer.byteLength(r.body));
      let req: ClientRequest;
      try {
        req = (secure ? https : http).request(url, {
          method: r.method ?? 'GET',
          agent: secure ? this.httpsAgent : this.httpAgent,
          headers,
          lookup: pinnedLookup(addresses),
          ...(secure && this.o.ca ? { ca: this.o.ca } : {}),
        });
      } catch (err) {
        return reject(asGuardedError(err));
      }
      let settled = false;
      // Later errors (the deadline or a reset after the answer began) reach the response, not this promise.
      req.on('error', (err) => {
        if (settled) return;
        settled = true;
        reject(deadline.failure(err));
      });
      deadline.whenExpired((err) => req.destroy(err));
      const connectMs = Math.min(r.connectTimeoutMs ?? r.timeoutMs, r.timeoutMs);
      req.once('socket', (socket) => {
        if (!socket.connecting) return; // a kept-alive connection
        const timer = setTimeout(() => req.destroy(new GuardedHttpError('TIMEOUT', `no connection within ${connectMs} ms`)), connectMs);
        socket.once(secure ? 'secureConnect' : 'connect', () => clearTimeout(timer));
        socket.once('close', () => clearTimeout(timer));
      });
      req.once('response', (res) => {
        settled = true;
        deadline.whenExpired((err) => res.destroy(err));
        resolve(res);
      });
      req.end(r.body);
    });
  }
}
