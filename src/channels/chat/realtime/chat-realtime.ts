import { randomUUID } from 'node:crypto';
import type { Server as HttpServer } from 'node:http';
import { createAdapter, createShardedAdapter } from '@socket.io/redis-adapter';
import type { Logger } from 'pino';
import { Server } from 'socket.io';
import { ApiError, errorEntry } from '../../../http/errors.js';
import type { Metrics } from '../../../metrics.js';
import type { ModuleRealtime } from '../../../platform/channel-module.js';
import type { ModuleRedis, RedisClient } from '../../../platform/redis-clients.js';
import type { RoleSet } from '../../../platform/roles.js';
import type { Db } from '../../../store/types.js';
import type { PushModuleService } from '../../push/index.js';
import type { ChatRealtimeEvent, ChatRealtimeSink } from '../chat-types.js';
import type { ChatConfig } from '../config.js';
import { LocalCollapse, OfflinePush, RedisCollapse } from './offline-push.js';
import { LocalPresence, RedisPresence, type Presence } from './presence.js';
import { PushOutbox } from './push-outbox.js';
import { channelRoom, NAMESPACE, SOCKET_PATH, userRoom, type ClientToServerEvents, type InterServerEvents, type ServerToClientEvents, type SocketData } from './protocol.js';
import { RealtimeMetrics } from './realtime-metrics.js';
import { adapterKey, adapterSafe, forwardChannel } from './redis-wiring.js';
import { maxPacketBytes, TokenBuckets } from './socket-limits.js';
import { serveSocket, type ChatNamespace, type ChatSocket, type RealtimeService } from './socket-session.js';

export interface ChatRealtimeOptions {
  config: ChatConfig;
  /** The service, once made (it is built after this, with this as its sink). */
  service: () => RealtimeService;
  push: PushModuleService['sends'];
  /** The outbox of push evaluations (chat_push_outbox) lives there. */
  db: Db;
  redis: ModuleRedis;
  roles: RoleSet;
  log: Logger;
  metrics: Metrics;
  clock?: () => number;
}

/** The outbox job: rows claimed per round, rounds per run, each claim's lease, messages evaluated at once. */
const OUTBOX_BATCH = 200;
const OUTBOX_ROUNDS = 50;
const OUTBOX_LEASE_MS = 60_000;
const OUTBOX_PARALLEL = 8;
/** How long drain() waits for its sockets to close before it gives up on them (the daemon's drain bounds it too). */
const DRAIN_WAIT_MS = 3000;
/** Reads (messages.sync, presence.get) per second per user, as a multiple of chat.messagesPerSecond (at least 20). */
const READS_PER_WRITE = 5;

/** A handshake refusal as Socket.IO clients see it: `err.message` is the code, `err.data` is `{code, message}`. */
function refusal(code: string, message?: string): Error & { data: { code: string; message: string } } {
  return Object.assign(new Error(code), { data: { code, message: message ?? errorEntry(code as never)?.message ?? code } });
}

/**
 * The chat's real time: Socket.IO on the API listener's server (path /socket.io, namespace /chat-sdk) in the realtime
 * role, a Redis adapter between instances (in memory embedded), presence, typing and read state, client sends with
 * acks, and pushes to offline members. The service calls publish() after each commit; a process without the realtime
 * role forwards what it publishes over Redis pub/sub to those with it.
 */
/** The field of a forwarded event naming the instance that sent it. */
const ORIGIN = '__origin';

export class ChatRealtime implements ChatRealtimeSink, ModuleRealtime {
  private readonly metrics: RealtimeMetrics;
  private readonly clock: () => number;
  private redis: RedisClient | null = null;
  private sub: RedisClient | null = null;
  private presence: Presence = new LocalPresence();
  private offlinePush: OfflinePush | null = null;
  private readonly outbox: PushOutbox;
  /** Tests: offline pushes off in this process (fast path and job), as if it crashed after each commit. */
  private pushesOff = false;
  private io: Server | null = null;
  private nsp: ChatNamespace | null = null;
  private heartbeat: NodeJS.Timeout | null = null;
  private readonly writes: TokenBuckets;
  private readonly reads: TokenBuckets;
  private readonly pending = new Set<Promise<unknown>>();
  private draining = false;
  /** Sockets of other instances are reached through the Redis adapter. */
  private clustered = false;
  /** Marks this process's own forwarded events (a Cluster's realtime instances forward theirs too). */
  private readonly instanceId = randomUUID();
  private forwardListener: ((channel: string, payload: string) => void) | null = null;

  constructor(private readonly o: ChatRealtimeOptions) {
    this.metrics = new RealtimeMetrics(o.metrics.registry);
    this.outbox = new PushOutbox({ db: o.db, log: o.log });
    this.clock = o.clock ?? Date.now;
    const mps = o.config.messagesPerSecond;
    this.writes = new TokenBuckets({ ratePerSecond: mps, burst: mps * 2, clock: this.clock });
    const rps = Math.max(20, mps * READS_PER_WRITE);
    this.reads = new TokenBuckets({ ratePerSecond: rps, burst: rps * 2, clock: this.clock });
  }

  private get realtimeRole(): boolean {
    return this.o.roles.has('realtime');
  }

  async start(): Promise<void> {
    const { redis, config, log } = this.o;
    if (redis.configured) {
      this.redis = redis.client('realtime');
      await this.redis!.connect().catch((err: Error) => log.warn({ err: err.message }, 'chat realtime: Redis not reachable at start (retrying)'));
      this.presence = new RedisPresence({ redis: this.redis!, keyPrefix: redis.keyPrefix, ttlSeconds: config.presenceTtlSeconds, log, clock: this.clock });
    }
    this.offlinePush = new OfflinePush({
      push: this.o.push,
      presence: this.presence,
      collapse: this.redis ? new RedisCollapse({ redis: this.redis, keyPrefix: redis.keyPrefix }) : new LocalCollapse(this.clock),
      collapseSeconds: config.pushCollapseSeconds,
      outbox: this.outbox,
      log,
      count: (outcome, n = 1) => this.metrics.pushes.inc({ outcome }, n),
      clock: this.clock,
    });
    this.offlinePush.disabled = this.pushesOff;
    if (!this.realtimeRole) return;
    if (this.redis) {
      this.sub = redis.subscriber('realtime-sub');
      await this.sub!.connect().catch((err: Error) => log.warn({ err: err.message }, 'chat realtime: Redis subscriber not reachable at start (retrying)'));
      const channel = forwardChannel(redis.keyPrefix);
      this.forwardListener = (ch, payload) => {
        if (ch === channel) this.onForwarded(payload);
      };
      // On a Cluster, sharded pub/sub: the channel lives on one shard instead of being broadcast to every node.
      this.sub!.on(redis.cluster ? 'smessage' : 'message', this.forwardListener);
      await (redis.cluster ? this.sub!.ssubscribe(channel) : this.sub!.subscribe(channel)).catch((err: Error) => log.warn({ err: err.message }, 'chat realtime: subscribing to forwarded events failed'));
    }
    // Renews presence before its TTL runs out (three beats per TTL, so one missed beat does not take users offline).
    this.heartbeat = setInterval(() => {
      this.writes.sweep();
      this.reads.sweep();
      this.presence.heartbeat().catch((err: Error) => log.debug({ err: err.message }, 'chat presence heartbeat failed'));
    }, (config.presenceTtlSeconds * 1000) / 3);
    this.heartbeat.unref();
  }

  async attach(server: HttpServer): Promise<void> {
    if (this.io) throw new Error('chat realtime: attached twice');
    const { config, log } = this.o;
    const pub = this.redis && adapterSafe(this.redis, (err) => log.debug({ err: err.message }, 'chat realtime: Redis adapter publish failed'));
    const sub = this.sub && adapterSafe(this.sub, (err) => log.warn({ err: err.message }, 'chat realtime: Redis adapter subscription failed'));
    // A Cluster gets the sharded adapter (SPUBLISH/SSUBSCRIBE), a single Redis the classic one. Static mode: one channel
    // per namespace, so a leave or a disconnect and the emits around it arrive in the order they were sent (a channel
    // per room, on the shards of their slots, let a "revoked" emit arrive after the disconnect it announced).
    const adapter = !pub || !sub ? undefined : this.o.redis.cluster
        ? createShardedAdapter(pub, sub, { channelPrefix: adapterKey(this.o.redis.keyPrefix), subscriptionMode: 'static' })
        : createAdapter(pub, sub, { key: adapterKey(this.o.redis.keyPrefix), publishOnSpecificResponseChannel: true });
    const io = new Server<ClientToServerEvents, ServerToClientEvents, InterServerEvents, SocketData>(server, {
      path: SOCKET_PATH,
      serveClient: false,
      // The widget runs on customers' sites: any origin, no cookies (the token travels in the handshake).
      cors: { origin: true, credentials: false },
      maxHttpBufferSize: maxPacketBytes(config.maxMessageBytes),
      // A draining instance takes no new connection: the client's reconnection goes on to another instance.
      allowRequest: (_req, cb) => cb(this.draining ? 'draining' : null, !this.draining),
      ...(adapter ? { adapter } : {}),
    });
    io.of('/').use((_socket, next) => next(refusal('NOT_FOUND', `Chat sockets use the namespace ${NAMESPACE}`)));
    const nsp = io.of(NAMESPACE);
    nsp.use((socket, next) => void this.handshake(socket).then(() => next(), next));
    nsp.on('connection', (socket) =>
      serveSocket(socket, {
        nsp,
        service: this.o.service,
        presence: this.presence,
        writes: this.writes,
        reads: this.reads,
        log,
        metrics: this.metrics,
        onRateLimited: (limit) => this.o.metrics.rateLimited.inc({ limit }),
        track: (p) => this.track(p),
        clock: this.clock,
      }),
    );
    this.clustered = adapter !== undefined;
    this.io = io as unknown as Server;
    this.nsp = nsp;
  }

  /** Verifies the handshake's token and finds the channels to join; throws the refusal. */
  private async handshake(socket: ChatSocket): Promise<void> {
    const token = (socket.handshake.auth as { token?: unknown } | undefined)?.token;
    try {
      if (this.draining) throw refusal('SHUTTING_DOWN');
      if (typeof token !== 'string' || !token) throw refusal('CHAT_TOKEN_INVALID', `No token: connect with io(baseUrl + '${NAMESPACE}', { auth: { token } })`);
      const service = this.o.service();
      const claims = await service.verifyToken(token);
      const channelIds = await service.channelIdsOf(claims.accountId, claims.userId, this.o.config.maxChannelsPerSocket);
      socket.data = { accountId: claims.accountId, userId: claims.userId, expiresAt: claims.expiresAt, channelIds };
    } catch (err) {
      const refused =
        err instanceof ApiError ? refusal(err.code, err.message) : (err as { data?: { code?: string } }).data?.code ? (err as ReturnType<typeof refusal>) : null;
      if (!refused) this.o.log.error({ err: (err as Error).message }, 'chat socket handshake failed');
      const out = refused ?? refusal('INTERNAL_ERROR');
      this.metrics.refused.inc({ code: out.data.code });
      throw out;
    }
  }

  /** Called by the service after each commit. Never throws, never waits: emitting and pushing go on after it returns. */
  publish(event: ChatRealtimeEvent): void {
    try {
      if (event.type === 'message.new') this.offlinePush?.onMessage(event);
      // On a Cluster the sharded adapter sends an emit to this process's own sockets only after its SPUBLISH came
      // back, after a leave or disconnect applied here at once: there every instance applies each event itself, this
      // one now, the others from the forward channel (one channel, so in the order sent).
      if (this.nsp && !this.o.redis.cluster) return this.emit(event, false);
      if (this.nsp) this.emit(event, true);
      if (this.redis) {
        const channel = forwardChannel(this.o.redis.keyPrefix);
        const payload = JSON.stringify(this.nsp ? { ...event, [ORIGIN]: this.instanceId } : event);
        (this.o.redis.cluster ? this.redis.spublish(channel, payload) : this.redis.publish(channel, payload)).catch((err: Error) => {
          this.o.log.warn({ err: err.message, type: event.type }, 'chat realtime: forwarding an event to the realtime instances failed');
        });
      }
      // Embedded without the realtime role: no socket anywhere to tell.
    } catch (err) {
      this.o.log.error({ err: (err as Error).message, type: event.type }, 'chat realtime: publish failed');
    }
  }

  private onForwarded(payload: string): void {
    try {
      const ev = JSON.parse(payload) as ChatRealtimeEvent & { [ORIGIN]?: string };
      if (ev[ORIGIN] === this.instanceId) return;
      delete ev[ORIGIN];
      if (this.nsp) this.emit(ev, true);
    } catch (err) {
      this.o.log.warn({ err: (err as Error).message }, 'chat realtime: a forwarded event could not be emitted');
    }
  }

  /**
   * Emits an event to its rooms: through the adapter to every instance, or (`local`, a forwarded event every realtime
   * instance receives) to this process's sockets only.
   */
  private emit(ev: ChatRealtimeEvent, local: boolean): void {
    const nsp = this.nsp!;
    const to = (room: string) => (local ? nsp.local.to(room) : nsp.to(room));
    // The Redis adapter applies a join, leave or disconnect when its own request comes back from Redis, after an emit
    // made meanwhile: this process's sockets are changed at once, the other instances' through the adapter (in order
    // with the emits, one connection).
    const everywhere = !local && this.clustered;
    const change = (room: string, fn: (op: ReturnType<ChatNamespace['in']>) => void) => {
      fn(nsp.local.in(room));
      if (everywhere) fn(nsp.in(room));
    };
    const acc = ev.accountId;
    switch (ev.type) {
      case 'message.new':
      case 'message.updated':
      case 'message.deleted':
        to(channelRoom(acc, ev.channelId)).emit(ev.type, { channelId: ev.channelId, message: ev.message });
        return;
      case 'read':
        to(channelRoom(acc, ev.channelId)).emit('read', { channelId: ev.channelId, userId: ev.userId, lastReadSeq: ev.lastReadSeq });
        return;
      case 'member.added': {
        // The new member's sockets join first, so they get the event too.
        const room = channelRoom(acc, ev.channelId);
        change(userRoom(acc, ev.member.userId), (op) => op.socketsJoin(room));
        to(room).emit('member.added', { channelId: ev.channelId, member: ev.member });
        return;
      }
      case 'member.removed': {
        const room = channelRoom(acc, ev.channelId);
        to(room).emit('member.removed', { channelId: ev.channelId, userId: ev.member.userId });
        change(userRoom(acc, ev.member.userId), (op) => op.socketsLeave(room));
        return;
      }
      case 'channel.updated':
        to(channelRoom(acc, ev.channel.id)).emit('channel.updated', { channel: ev.channel });
        return;
      case 'channel.deleted': {
        const room = channelRoom(acc, ev.channelId);
        to(room).emit('channel.deleted', { channelId: ev.channelId });
        change(room, (op) => op.socketsLeave(room));
        return;
      }
      case 'user.revoked': {
        const room = userRoom(acc, ev.userId);
        to(room).emit('revoked', { reason: ev.reason });
        // Closed with a DISCONNECT packet: Socket.IO clients do not reconnect after it ("io server disconnect").
        change(room, (op) => op.disconnectSockets(true));
        return;
      }
    }
  }

  private track(p: Promise<unknown>): void {
    const tracked = p.catch((err: Error) => this.o.log.debug({ err: err.message }, 'chat realtime: background work failed')).finally(() => this.pending.delete(tracked));
    this.pending.add(tracked);
  }

  /**
   * Tells this process's sockets to reconnect and closes their transports (not a Socket.IO disconnect, so the
   * clients' own reconnection takes them to another instance); new connections are refused from now on.
   */
  async drain(): Promise<void> {
    this.draining = true;
    const nsp = this.nsp;
    if (!nsp) return;
    nsp.local.emit('reconnect', { reason: 'draining' });
    // Closed without discarding, so the 'reconnect' packet written just before leaves first.
    for (const socket of nsp.sockets.values()) socket.conn.close();
    const until = this.clock() + DRAIN_WAIT_MS;
    while (nsp.sockets.size && this.clock() < until) await new Promise((r) => setTimeout(r, 10));
    const engine = this.io!.engine as unknown as { clients: Record<string, { close(): void }> };
    for (const client of Object.values(engine.clients)) client.close();
    // Sends under way finish (stored and emitted) before the stores close; those queued behind them are dropped.
    await Promise.all([...this.pending]);
  }

  async stop(): Promise<void> {
    this.draining = true;
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
    if (this.nsp) await Promise.resolve(this.nsp.adapter.close()).catch(() => undefined);
    if (this.sub && this.forwardListener) {
      const channel = forwardChannel(this.o.redis.keyPrefix);
      this.sub.off(this.o.redis.cluster ? 'smessage' : 'message', this.forwardListener);
      await (this.o.redis.cluster ? this.sub.sunsubscribe(channel) : this.sub.unsubscribe(channel)).catch(() => undefined);
    }
    await Promise.all([...this.pending]);
    await this.offlinePush?.settled(2000);
    // Rows whose pushes were handed over go now; any left are the job's (pushed again: at least once).
    await this.outbox.flush();
  }

  /**
   * The chat.push-outbox job: the push evaluations still in the outbox once due (their process crashed, its queue was
   * full, a push failed without an answer), claimed for a lease, evaluated again (presence, collapse, push) and deleted.
   */
  async runPushOutbox(signal: AbortSignal): Promise<number> {
    const push = this.offlinePush;
    if (!push || this.pushesOff) return 0;
    let handed = 0;
    for (let round = 0; round < OUTBOX_ROUNDS && !signal.aborted; round++) {
      const ids = await this.outbox.claimDue(OUTBOX_BATCH, OUTBOX_LEASE_MS);
      if (!ids.length) break;
      const candidates = await this.outbox.load(ids);
      const found = new Set(candidates.map((c) => c.message.id));
      // A message deleted (or gone with its channel) pushes nobody.
      for (const id of ids) if (!found.has(id)) this.outbox.done(id);
      for (let i = 0; i < candidates.length; i += OUTBOX_PARALLEL) {
        await Promise.all(
          candidates.slice(i, i + OUTBOX_PARALLEL).map(async (c) => {
            try {
              if (await push.evaluateNow(c)) {
                this.outbox.done(c.message.id);
                handed++;
              }
            } catch (err) {
              this.o.log.warn({ err: (err as Error).message, messageId: c.message.id }, 'chat push outbox: evaluation failed (retried after its lease)');
            }
          }),
        );
      }
      await this.outbox.flush();
      if (ids.length < OUTBOX_BATCH) break;
    }
    return handed;
  }

  /** Tests: offline pushes off in this process (the fast path and the job), as if it crashed after each commit. */
  disableOfflinePushes(): void {
    this.pushesOff = true;
    if (this.offlinePush) this.offlinePush.disabled = true;
  }

  /** This process's live sockets (tests, the bench). */
  get localSockets(): number {
    return this.nsp?.sockets.size ?? 0;
  }

  /** Resolves when the pushes under way have been handed to the push module (tests). */
  async pushesSettled(limitMs = 5000): Promise<void> {
    await this.offlinePush?.settled(limitMs);
    await this.outbox.flush();
  }
}
