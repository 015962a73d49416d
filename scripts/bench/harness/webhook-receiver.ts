/**
 * A webhook receiver for the bench: a loopback HTTP server that answers every POST 200 at once, as a well-run
 * customer endpoint does, and keeps what a run needs to count: each event id seen (duplicates are counted, not
 * double-counted), events by type, signatures checked against the endpoint's secret, and per delivery the event's
 * createdAt and the arrival time. Its own process, so its CPU is measured apart from the daemon's.
 *
 *   node --import tsx scripts/bench/harness/webhook-receiver.ts --port P
 *
 * Control (same port): PUT /secret (the signing secret, body as text), GET /stats?from=MS&to=MS (counts so far;
 * arrivals in [from, to) and the created → received latency of events created in [from, to)).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import { Args } from './args.js';
import { percentiles, type Percentiles } from './stats.js';

export interface ReceiverStats {
  /** POSTs answered. */
  received: number;
  /** Distinct event ids among them. */
  distinct: number;
  duplicates: number;
  /** Deliveries whose signature did not verify (or came before the secret was set), and bodies that did not parse. */
  badSignatures: number;
  badBodies: number;
  byType: Record<string, number>;
  lastArrival: number;
  window: { arrivals: number; created: number; latency: Percentiles; latencyByType: Record<string, Percentiles> };
}

/** Samples kept: created and arrival time of each delivery (about 16 MB at the cap). */
const CAPACITY = 1_000_000;

const args = new Args();
const seen = new Set<string>();
const byType = new Map<string, number>();
const created = new Float64Array(CAPACITY);
const arrived = new Float64Array(CAPACITY);
/** Index of each sample's type in `types`. */
const typeOf = new Uint8Array(CAPACITY);
const types: string[] = [];
let n = 0;
let received = 0;
let duplicates = 0;
let badSignatures = 0;
let badBodies = 0;
let lastArrival = 0;
let key: Buffer | null = null;

function signatureOk(id: string, timestamp: string, body: string, header: string): boolean {
  if (!key) return false;
  const want = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest();
  for (const part of header.split(' ')) {
    if (!part.startsWith('v1,')) continue;
    const got = Buffer.from(part.slice(3), 'base64');
    if (got.length === want.length && timingSafeEqual(got, want)) return true;
  }
  return false;
}

function onDelivery(req: http.IncomingMessage, body: string): void {
  const now = Date.now();
  received++;
  lastArrival = now;
  const id = String(req.headers['webhook-id'] ?? '');
  if (!signatureOk(id, String(req.headers['webhook-timestamp'] ?? ''), body, String(req.headers['webhook-signature'] ?? ''))) badSignatures++;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    badBodies++;
    return;
  }
  // A batched delivery is an array of events under a webhook-id of its own; each event counts by its id.
  if (Array.isArray(parsed)) for (const event of parsed as { id?: string; type?: string; createdAt?: string }[]) record(String(event.id), event, now);
  else record(id, parsed as { type?: string; createdAt?: string }, now);
}

function record(id: string, event: { type?: string; createdAt?: string }, now: number): void {
  if (seen.has(id)) {
    duplicates++;
    return;
  }
  seen.add(id);
  const type = String(event.type);
  byType.set(type, (byType.get(type) ?? 0) + 1);
  if (n < CAPACITY) {
    created[n] = Date.parse(String(event.createdAt));
    arrived[n] = now;
    let t = types.indexOf(type);
    if (t < 0) t = types.push(type) - 1;
    typeOf[n] = t;
    n++;
  }
}

function stats(from: number, to: number): ReceiverStats {
  let arrivals = 0;
  const latencies: number[] = [];
  const perType = types.map((): number[] => []);
  for (let i = 0; i < n; i++) {
    if (arrived[i] >= from && arrived[i] < to) arrivals++;
    if (created[i] >= from && created[i] < to) {
      latencies.push(arrived[i] - created[i]);
      perType[typeOf[i]].push(arrived[i] - created[i]);
    }
  }
  return {
    received,
    distinct: seen.size,
    duplicates,
    badSignatures,
    badBodies,
    byType: Object.fromEntries(byType),
    lastArrival,
    window: {
      arrivals,
      created: latencies.length,
      latency: percentiles(Float64Array.from(latencies)),
      latencyByType: Object.fromEntries(types.map((t, i) => [t, percentiles(Float64Array.from(perType[i]))])),
    },
  };
}

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');
    const url = new URL(req.url ?? '/', 'http://receiver');
    if (req.method === 'POST' && url.pathname === '/hook') {
      onDelivery(req, body);
      res.writeHead(200, { 'content-length': '0' }).end();
    } else if (req.method === 'PUT' && url.pathname === '/secret') {
      key = Buffer.from(body.trim().replace(/^whsec_/, ''), 'base64');
      res.writeHead(204).end();
    } else if (req.method === 'GET' && url.pathname === '/stats') {
      const s = stats(Number(url.searchParams.get('from') ?? 0), Number(url.searchParams.get('to') ?? Infinity));
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(s));
    } else res.writeHead(404).end();
  });
});
// Ferry keeps its connections to an endpoint open between deliveries.
server.keepAliveTimeout = 60_000;
server.listen(args.number('port', 0, { integer: true, min: 0 }), '127.0.0.1', () => {
  process.stdout.write(`webhook receiver listening on ${(server.address() as { port: number }).port}\n`);
});
const stop = (): void => {
  server.close();
  server.closeAllConnections();
  process.exit(0);
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
