import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { PushModuleService } from '../../push/index.js';
import type { ChatRealtimeEvent } from '../chat-types.js';
import type { Presence } from './presence.js';

type MessageNew = Extract<ChatRealtimeEvent, { type: 'message.new' }>;
type PushSends = Pick<PushModuleService['sends'], 'send'>;
type SendInput = Parameters<PushSends['send']>[0];

/** One push per (member, channel) per window: the first caller within it wins. */
export interface PushCollapse {
  claim(key: string, windowMs: number): Promise<boolean>;
}

/** Redis: SET NX PX, so every instance shares the window. A Redis error lets the push go (one too many, not one lost). */
export class RedisCollapse implements PushCollapse {
  constructor(private readonly o: { redis: Redis; keyPrefix: string }) {}

  async claim(key: string, windowMs: number): Promise<boolean> {
    try {
      return (await this.o.redis.set(`${this.o.keyPrefix}chat:push-collapse:${key}`, '1', 'PX', windowMs, 'NX')) === 'OK';
    } catch {
      return true;
    }
  }
}

/** Embedded: a map of window ends, swept as it is used. */
export class LocalCollapse implements PushCollapse {
  private readonly until = new Map<string, number>();

  constructor(private readonly clock: () => number = Date.now) {}

  async claim(key: string, windowMs: number): Promise<boolean> {
    const now = this.clock();
    if ((this.until.get(key) ?? 0) > now) return false;
    if (this.until.size > 10_000) for (const [k, t] of this.until) if (t <= now) this.until.delete(k);
    this.until.set(key, now + windowMs);
    return true;
  }
}

/** Push's answers that mean "nobody to push to", normal for a chat user without the app: not worth a warning. */
const NOBODY_TO_PUSH = new Set(['NO_ACTIVE_DEVICES', 'APP_NOT_FOUND']);
/** Longest notification body: the text is cut there (push payloads are small, a notification shows a line or two). */
export const PUSH_BODY_CHARS = 180;
/** Pushes under way at once; more wait in a queue of at most QUEUE_LIMIT (beyond it they are dropped, counted, warned). */
const IN_FLIGHT = 32;
const QUEUE_LIMIT = 10_000;

export function truncate(text: string, chars: number): string {
  const cps = Array.from(text);
  return cps.length <= chars ? text : `${cps.slice(0, chars - 1).join('')}…`;
}

/**
 * Pushes a new message to the channel's members with no live socket, through the push product's sends to the user's
 * devices: the sender, muted members and `skipPush` messages excluded, at most one per member per channel per
 * chat.pushCollapseSeconds. Runs in the process that stored the message (it alone gets the event), off the send's
 * path: the caller is not held up, failures are logged.
 */
export class OfflinePush {
  private inFlight = 0;
  /** Messages whose members are still being looked at (presence, collapse) before their pushes are queued. */
  private preparing = 0;
  private readonly queue: SendInput[] = [];
  private readonly idle = new Set<() => void>();

  constructor(
    private readonly o: {
      push: PushSends;
      presence: Presence;
      collapse: PushCollapse;
      collapseSeconds: number;
      log: Logger;
      /** Counts each outcome: sent (accepted by push), no_device, collapsed, failed, dropped. */
      count: (outcome: string, n?: number) => void;
    },
  ) {}

  /** Starts the pushes for one message.new; returns at once. */
  onMessage(ev: MessageNew): void {
    if (ev.skipPush) return;
    const muted = ev.mutedMembers.length ? new Set(ev.mutedMembers) : null;
    const candidates: string[] = [];
    for (const m of ev.members) {
      if (m === ev.message.userId || muted?.has(m)) continue;
      // Most members of a busy channel are online on this very instance: no I/O for them.
      if (!this.o.presence.hasLocal(ev.accountId, m)) candidates.push(m);
    }
    if (!candidates.length) return;
    this.preparing++;
    void this.pushOffline(ev, candidates)
      .catch((err: Error) => this.o.log.warn({ err: err.message, channelId: ev.channelId }, 'chat offline push failed'))
      .finally(() => {
        this.preparing--;
        this.checkIdle();
      });
  }

  private checkIdle(): void {
    if (!this.inFlight && !this.preparing && !this.queue.length) for (const done of this.idle) done();
  }

  private async pushOffline(ev: MessageNew, candidates: string[]): Promise<void> {
    const online = await this.o.presence.online(ev.accountId, candidates);
    const windowMs = this.o.collapseSeconds * 1000;
    for (const userId of candidates) {
      if (online.has(userId)) continue;
      if (windowMs > 0 && !(await this.o.collapse.claim(`${ev.accountId}:${ev.channelId}:${userId}`, windowMs))) {
        this.o.count('collapsed');
        continue;
      }
      this.enqueue(this.input(ev, userId));
    }
  }

  private input(ev: MessageNew, userId: string): SendInput {
    const m = ev.message;
    const body = m.text ? truncate(m.text, PUSH_BODY_CHARS) : undefined;
    return {
      accountId: ev.accountId,
      to: { userId },
      notification: { title: ev.channelName ?? ev.senderName ?? 'New message', ...(body ? { body } : {}) },
      data: { type: 'chat.message.new', channelId: ev.channelId, messageId: m.id, seq: String(m.seq) },
      collapseKey: ev.channelId,
    };
  }

  private enqueue(input: SendInput): void {
    if (this.inFlight < IN_FLIGHT) return void this.run(input);
    if (this.queue.length >= QUEUE_LIMIT) {
      this.o.count('dropped');
      this.o.log.warn({ channelId: input.data?.channelId, userId: input.to.userId }, 'chat offline push dropped: too many pushes waiting');
      return;
    }
    this.queue.push(input);
  }

  private run(input: SendInput): void {
    this.inFlight++;
    this.o.push
      .send(input)
      .then(
        () => this.o.count('sent'),
        (err: Error & { code?: string }) => {
          if (err.code && NOBODY_TO_PUSH.has(err.code)) return this.o.count('no_device');
          this.o.count('failed');
          this.o.log.warn({ err: err.message, code: err.code, userId: input.to.userId, channelId: input.data?.channelId }, 'chat offline push failed');
        },
      )
      .finally(() => {
        this.inFlight--;
        const next = this.queue.shift();
        if (next) this.run(next);
        else this.checkIdle();
      });
  }

  /** Resolves when no push is being prepared, under way or waiting (stop, tests); bounded by `limitMs`. */
  async settled(limitMs = 5000): Promise<void> {
    if (!this.inFlight && !this.preparing && !this.queue.length) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(finish, limitMs);
      function finish(): void {
        clearTimeout(timer);
        resolve();
      }
      const done = () => {
        this.idle.delete(done);
        finish();
      };
      this.idle.add(done);
    });
  }
}
