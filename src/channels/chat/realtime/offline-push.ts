import type { RedisClient } from '../../../platform/redis-clients.js';
import type { Logger } from 'pino';
import type { PushModuleService } from '../../push/index.js';
import type { ChatMessage, ChatRealtimeEvent } from '../chat-types.js';
import type { Presence } from './presence.js';

type MessageNew = Extract<ChatRealtimeEvent, { type: 'message.new' }>;
type PushSends = Pick<PushModuleService['sends'], 'send'>;
type SendInput = Parameters<PushSends['send']>[0];

/**
 * One push per (member, channel) per window: the first caller within it wins. `owner` (the message): the same message
 * evaluated again (by the outbox job, after a crash) claims the window it holds, so a push claimed but never sent is
 * not lost to its own claim.
 */
export interface PushCollapse {
  claim(key: string, windowMs: number, owner?: string): Promise<boolean>;
}

/** SET NX PX, else "held by this owner": one round trip. */
const CLAIM_SCRIPT = `if redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2], 'NX') then return 1 end
if redis.call('GET', KEYS[1]) == ARGV[1] then return 1 end
return 0`;

/** Redis: every instance shares the window. A Redis error lets the push go (one too many, not one lost). */
export class RedisCollapse implements PushCollapse {
  constructor(private readonly o: { redis: RedisClient; keyPrefix: string }) {}

  async claim(key: string, windowMs: number, owner = '1'): Promise<boolean> {
    try {
      return (await this.o.redis.eval(CLAIM_SCRIPT, 1, `${this.o.keyPrefix}chat:push-collapse:${key}`, owner, windowMs)) === 1;
    } catch {
      return true;
    }
  }
}

/** Embedded: a map of window ends and owners, swept as it is used. */
export class LocalCollapse implements PushCollapse {
  private readonly until = new Map<string, { end: number; owner: string }>();

  constructor(private readonly clock: () => number = Date.now) {}

  async claim(key: string, windowMs: number, owner = ''): Promise<boolean> {
    const now = this.clock();
    const held = this.until.get(key);
    if (held && held.end > now) return owner !== '' && held.owner === owner;
    if (this.until.size > 10_000) for (const [k, t] of this.until) if (t.end <= now) this.until.delete(k);
    this.until.set(key, { end: now + windowMs, owner });
    return true;
  }
}

/** Push's answers that mean "nobody to push to", normal for a chat user without the app: not worth a warning. */
const NOBODY_TO_PUSH = new Set(['NO_ACTIVE_DEVICES', 'APP_NOT_FOUND']);
/** Longest notification body: the text is cut there (push payloads are small, a notification shows a line or two). */
export const PUSH_BODY_CHARS = 180;
/**
 * Pushes under way at once on the fast path; more wait in a queue. Beyond QUEUE_LIMIT waiting (or being prepared) a
 * message is not taken up at all: its outbox row is left to the job (back-pressure, nothing dropped).
 */
const IN_FLIGHT = 32;
const QUEUE_LIMIT = 10_000;
/**
 * A push still waiting this long after its message was published is left to the job instead (well before the outbox
 * row is due, so the job and the fast path do not both push it).
 */
const FAST_PATH_DEADLINE_MS = 3000;

/** What a push evaluation needs of a message (a message.new event, or the outbox job's reading of the message). */
export interface PushCandidate {
  accountId: string;
  channelId: string;
  message: Pick<ChatMessage, 'id' | 'seq' | 'userId' | 'text'>;
  members: string[];
  /** Members not to push: muted (and, read by the job, those who read the message since). */
  mutedMembers: string[];
  channelName: string | null;
  senderName: string | null;
}

/** Where a message's evaluation ends: its outbox row is deleted (done) or left to the job. */
export interface PushOutboxRows {
  done(messageId: string): void;
}

interface Waiting {
  input: SendInput;
  since: number;
  settle: (handed: boolean) => void;
}

export function truncate(text: string, chars: number): string {
  const cps = Array.from(text);
  return cps.length <= chars ? text : `${cps.slice(0, chars - 1).join('')}…`;
}

/**
 * Pushes a new message to the channel's members with no live socket, through the push product's sends to the user's
 * devices: the sender, muted members and `skipPush` messages excluded, at most one per member per channel per
 * chat.pushCollapseSeconds. Durable: the message's outbox row (written with it) is deleted only once every push was
 * handed to the push product (whose send is durable) or judged not needed. The fast path runs in the process that
 * stored the message, off the send's path; what it does not finish (a crash, a full queue, a transient failure) the
 * chat.push-outbox job evaluates again through evaluate().
 */
export class OfflinePush {
  private inFlight = 0;
  /** Messages whose members are still being looked at (presence, collapse) before their pushes are queued. */
  private preparing = 0;
  private readonly queue: Waiting[] = [];
  private readonly idle = new Set<() => void>();
  /** Tests: this process pushes nothing, as if it crashed right after each commit (the outbox rows stay). */
  disabled = false;

  constructor(
    private readonly o: {
      push: PushSends;
      presence: Presence;
      collapse: PushCollapse;
      collapseSeconds: number;
      outbox: PushOutboxRows;
      log: Logger;
      /** Counts each outcome: sent (accepted by push), no_device, collapsed, failed, deferred (left to the job). */
      count: (outcome: string, n?: number) => void;
      clock?: () => number;
    },
  ) {}

  private now(): number {
    return (this.o.clock ?? Date.now)();
  }

  /** The fast path for one message.new; returns at once. */
  onMessage(ev: MessageNew): void {
    // The send wrote an outbox row only for a channel of more than one member (its count, read in the same transaction).
    if (ev.skipPush || this.disabled || ev.members.length < 2) return;
    if (this.queue.length + this.preparing >= QUEUE_LIMIT) {
      // Back-pressure: the row stays, the job takes it once due.
      this.o.count('deferred');
      return;
    }
    const since = this.now();
    this.preparing++;
    void this.evaluate(ev, (input) => this.enqueue(input, since))
      .then((handed) => {
        if (handed) this.o.outbox.done(ev.message.id);
      })
      .catch((err: Error) => this.o.log.warn({ err: err.message, channelId: ev.channelId }, 'chat offline push failed (left to the outbox job)'))
      .finally(() => {
        this.preparing--;
        this.checkIdle();
      });
  }

  /** The job's path: evaluates a message again, its pushes sent at once; true when its row may go. */
  async evaluateNow(c: PushCandidate): Promise<boolean> {
    if (this.disabled) return false;
    return this.evaluate(c, (input) => this.send(input));
  }

  private checkIdle(): void {
    if (!this.inFlight && !this.preparing && !this.queue.length) for (const done of this.idle) done();
  }

  /**
   * Presence, then collapse, then a push per offline member through `push`; true when every push was handed to the
   * push product or judged not needed (so the outbox row may go).
   */
  private async evaluate(c: PushCandidate, push: (input: SendInput) => Promise<boolean>): Promise<boolean> {
    const muted = c.mutedMembers.length ? new Set(c.mutedMembers) : null;
    const candidates: string[] = [];
    for (const m of c.members) {
      if (m === c.message.userId || muted?.has(m)) continue;
      // Most members of a busy channel are online on this very instance: no I/O for them.
      if (!this.o.presence.hasLocal(c.accountId, m)) candidates.push(m);
    }
    if (!candidates.length) return true;
    const online = await this.o.presence.online(c.accountId, candidates);
    const windowMs = this.o.collapseSeconds * 1000;
    const pushes: Promise<boolean>[] = [];
    for (const userId of candidates) {
      if (online.has(userId)) continue;
      if (windowMs > 0 && !(await this.o.collapse.claim(`${c.accountId}:${c.channelId}:${userId}`, windowMs, c.message.id))) {
        this.o.count('collapsed');
        continue;
      }
      pushes.push(push(this.input(c, userId)));
    }
    return (await Promise.all(pushes)).every(Boolean);
  }

  private input(c: PushCandidate, userId: string): SendInput {
    const m = c.message;
    const body = m.text ? truncate(m.text, PUSH_BODY_CHARS) : undefined;
    return {
      accountId: c.accountId,
      to: { userId },
      notification: { title: c.channelName ?? c.senderName ?? 'New message', ...(body ? { body } : {}) },
      data: { type: 'chat.message.new', channelId: c.channelId, messageId: m.id, seq: String(m.seq) },
      collapseKey: c.channelId,
    };
  }

  private enqueue(input: SendInput, since: number): Promise<boolean> {
    return new Promise<boolean>((settle) => {
      const waiting: Waiting = { input, since, settle };
      if (this.inFlight < IN_FLIGHT) this.run(waiting);
      else this.queue.push(waiting);
    });
  }

  private run(w: Waiting): void {
    this.inFlight++;
    const late = this.now() - w.since > FAST_PATH_DEADLINE_MS;
    if (late) this.o.count('deferred');
    (late ? Promise.resolve(false) : this.send(w.input))
      .then(w.settle)
      .finally(() => {
        this.inFlight--;
        const next = this.queue.shift();
        if (next) this.run(next);
        else this.checkIdle();
      });
  }

  /**
   * One push handed to the push product: true once it took it, or answered with a code (nobody to push to, or a
   * refusal a retry would not change: logged); false on a failure without one (the store, say), for the job to retry.
   */
  private send(input: SendInput): Promise<boolean> {
    return this.o.push.send(input).then(
      () => {
        this.o.count('sent');
        return true;
      },
      (err: Error & { code?: string }) => {
        if (err.code && NOBODY_TO_PUSH.has(err.code)) {
          this.o.count('no_device');
          return true;
        }
        this.o.count('failed');
        this.o.log.warn({ err: err.message, code: err.code, userId: input.to.userId, channelId: input.data?.channelId }, 'chat offline push failed');
        return err.code !== undefined;
      },
    );
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
