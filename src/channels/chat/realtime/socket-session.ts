import type { Logger } from 'pino';
import type { Namespace, Socket } from 'socket.io';
import { ApiError, rateLimited } from '../../../http/errors.js';
import type { ChatServiceApi } from '../chat-types.js';
import type { Presence } from './presence.js';
import {
  ackError,
  channelRoom,
  parseChannel,
  parsePresence,
  parseRead,
  parseSend,
  parseSync,
  userRoom,
  type ClientToServerEvents,
  type InterServerEvents,
  type ServerToClientEvents,
  type SocketData,
} from './protocol.js';
import type { RealtimeMetrics } from './realtime-metrics.js';
import type { TokenBuckets } from './socket-limits.js';

export type ChatSocket = Socket<ClientToServerEvents, ServerToClientEvents, InterServerEvents, SocketData>;
export type ChatNamespace = Namespace<ClientToServerEvents, ServerToClientEvents, InterServerEvents, SocketData>;

/** The service as the sockets use it: ChatServiceApi, and the send limit shared with REST when the service has one. */
export type RealtimeService = ChatServiceApi & {
  /** One send against chat.messagesPerSecond, shared by every instance and by REST; null: no shared limit. */
  allowSend?(accountId: string, userId: string): Promise<{ allowed: boolean; retryAfterMs: number } | null>;
};

export interface SessionDeps {
  nsp: ChatNamespace;
  service: () => RealtimeService;
  presence: Presence;
  /** Typing and read marks per user (and sends when the service has no shared limit). */
  writes: TokenBuckets;
  /** Syncs and presence lookups, per user. */
  reads: TokenBuckets;
  log: Logger;
  metrics: RealtimeMetrics;
  /** Counts a refusal by a limit (the daemon's ferry_rate_limited_total). */
  onRateLimited: (limit: string) => void;
  /** Keeps work in flight (an event being served, a presence update) so drain() can wait for it. */
  track: (p: Promise<unknown>) => void;
  clock: () => number;
}

/** setTimeout's longest delay; a token living longer is re-armed. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * One connected socket: joins its rooms (synchronously, in the same tick as its CONNECT, so nothing emitted after the
 * connect is missed), reports presence, closes itself when its token expires, and serves the client's events. Every
 * event answers its ack with `{ok: true, …}` or `{ok: false, error: {code, message, data?}}`.
 */
export function serveSocket(socket: ChatSocket, deps: SessionDeps): void {
  const { accountId, userId, expiresAt, channelIds } = socket.data;
  const { service, presence } = deps;
  socket.join([userRoom(accountId, userId), ...channelIds.map((c) => channelRoom(accountId, c))]);
  socket.data.channelIds = [];
  deps.metrics.sockets.inc();

  const channelRooms = (): string[] => [...socket.rooms].filter((r) => r.startsWith('c:'));
  deps.track(
    presence.add(accountId, userId, socket.id).then((first) => {
      if (first && socket.connected) socket.to(channelRooms()).emit('presence', { userId, online: true });
    }),
  );

  let expiry: NodeJS.Timeout | undefined;
  const armExpiry = (): void => {
    const left = expiresAt * 1000 - deps.clock();
    expiry = setTimeout(
      () => {
        if (left > MAX_TIMER_MS) return armExpiry();
        socket.emit('revoked', { reason: 'expired' });
        socket.disconnect(true);
      },
      Math.max(0, Math.min(left, MAX_TIMER_MS)),
    );
    expiry.unref();
  };
  armExpiry();

  const typing = new Set<string>();
  let gone = false;
  socket.on('disconnecting', () => {
    gone = true;
    clearTimeout(expiry);
    deps.metrics.sockets.dec();
    const rooms = channelRooms();
    for (const channelId of typing) deps.nsp.to(channelRoom(accountId, channelId)).except(socket.id).emit('typing.stop', { channelId, userId });
    deps.track(
      presence.remove(accountId, userId, socket.id).then((last) => {
        if (last && rooms.length) deps.nsp.to(rooms).emit('presence', { userId, online: false });
      }),
    );
  });

  /** A member of the channel: its room was joined (at connect or member.added); past maxChannelsPerSocket, asked. */
  const requireMember = async (channelId: string): Promise<void> => {
    if (!socket.rooms.has(channelRoom(accountId, channelId))) await service().requireMember(accountId, channelId, userId);
  };
  const refuse = (limit: string, waitMs: number): never => {
    deps.onRateLimited(limit);
    throw rateLimited('RATE_LIMIT_EXCEEDED', waitMs, { limit, retryAfterMs: waitMs });
  };
  const take = (buckets: TokenBuckets, limit: string): void => {
    const waitMs = buckets.take(`${accountId}:${userId}`);
    if (waitMs) refuse(limit, waitMs);
  };
  /** A send counts where REST's do (the platform's throttle, every instance); this process's bucket without one. */
  const takeSend = async (): Promise<void> => {
    const svc = service();
    const shared = svc.allowSend ? await svc.allowSend(accountId, userId).catch(() => null) : null;
    if (!shared) return take(deps.writes, 'chat.messagesPerSecond');
    if (!shared.allowed) refuse('chat.messagesPerSecond', Math.max(1, shared.retryAfterMs));
  };

  // A socket's sends are stored one after the other: its messages get their seqs in the order it sent them.
  let sends: Promise<unknown> = Promise.resolve();

  handle(socket, deps, 'message.send', async (raw) => {
    const p = parseSend(raw);
    await takeSend();
    const run = () => {
      // Queued behind this socket's earlier sends and the socket closed meanwhile: nobody is left to ack, and the
      // client sends it again with the same clientMsgId. Not stored, so not emitted.
      if (gone) throw new ApiError('SERVICE_UNAVAILABLE', { message: 'The socket closed before this send was stored; send it again with the same clientMsgId' });
      return service().sendMessage({
        accountId,
        channelId: p.channelId,
        userId,
        text: p.text,
        clientMsgId: p.clientMsgId,
        ...(p.attachments ? { attachments: p.attachments } : {}),
        ...(p.data ? { data: p.data } : {}),
      });
    };
    const stored = sends.then(run, run);
    sends = stored.catch(() => undefined);
    const { message, created } = await stored;
    if (typing.delete(p.channelId)) socket.to(channelRoom(accountId, p.channelId)).emit('typing.stop', { channelId: p.channelId, userId });
    return { message, created };
  });

  handle(socket, deps, 'messages.sync', async (raw) => {
    const p = parseSync(raw);
    take(deps.reads, 'chat.socketReads');
    await requireMember(p.channelId);
    const page = await service().listMessages(accountId, p.channelId, { afterSeq: p.afterSeq, limit: p.limit });
    return { messages: page.messages, hasMore: page.hasMore };
  });

  for (const event of ['typing.start', 'typing.stop'] as const) {
    handle(socket, deps, event, async (raw) => {
      const { channelId } = parseChannel(raw);
      take(deps.writes, 'chat.messagesPerSecond');
      await requireMember(channelId);
      if (event === 'typing.start') typing.add(channelId);
      else typing.delete(channelId);
      socket.to(channelRoom(accountId, channelId)).emit(event, { channelId, userId });
      return {};
    });
  }

  handle(socket, deps, 'read', async (raw) => {
    const p = parseRead(raw);
    take(deps.writes, 'chat.messagesPerSecond');
    const member = await service().markRead(accountId, p.channelId, userId, p.seq);
    return { lastReadSeq: member.lastReadSeq };
  });

  handle(socket, deps, 'presence.get', async (raw) => {
    const { userIds } = parsePresence(raw);
    take(deps.reads, 'chat.socketReads');
    const online = await presence.online(accountId, userIds);
    return { presence: userIds.map((u) => ({ userId: u, online: online.has(u) })) };
  });

}

/** Registers one client event: runs it, answers the ack (when the client asked for one), logs what is not an ApiError. */
function handle<T extends object>(socket: ChatSocket, deps: SessionDeps, event: keyof ClientToServerEvents, run: (raw: unknown) => Promise<T>): void {
  (socket as unknown as { on(e: string, l: (...args: unknown[]) => void): void }).on(event, (raw: unknown, ack: unknown) => {
    deps.metrics.events.inc({ event });
    const answer = typeof ack === 'function' ? (ack as (a: unknown) => void) : null;
    const served = run(raw).then(
      (r) => answer?.({ ok: true, ...r }),
      (err: unknown) => {
        if (!(err instanceof ApiError)) deps.log.error({ err: (err as Error)?.message, event }, 'chat socket event failed');
        answer?.(ackError(err));
      },
    );
    deps.track(served);
  });
}
