import type { Logger } from 'pino';
import type { ModulePubSub } from '../../platform/pubsub.js';
import type { Link } from './link.js';
import type { LinkStore } from './link-store.js';

interface Entry {
  link: Link | null;
  until: number;
}

/** Unknown slugs are remembered briefly too, so a flood of made-up slugs does not become a flood of queries. */
const MISS_TTL_MS = 5000;
const MAX_ENTRIES = 100_000;
/** The channel (`<keyPrefix>shortlink:invalidate` on Redis, as before the platform's pub/sub). */
const INVALIDATE = 'invalidate';

/**
 * Slug → link, in process, so a redirect usually answers without storage. Kept coherent across instances: every
 * create, update and delete publishes the slug on the module's pub/sub channel `invalidate` (ctx.pubsub: Redis, or
 * in-process when embedded) and every instance drops it. The TTL bounds staleness should a message be lost (Redis restart).
 * Concurrent misses for one slug share one query.
 */
export class LinkCache {
  private readonly entries = new Map<string, Entry>();
  private readonly loading = new Map<string, Promise<Link | null>>();
  /** Bumped per slug on invalidation, so a load that started before it does not put the old row back. */
  private readonly epochs = new Map<string, number>();

  constructor(
    private readonly store: LinkStore,
    private readonly ttlMs: number,
    private readonly pubsub: ModulePubSub | null,
    private readonly log: Logger,
    private readonly clock: () => number = Date.now,
  ) {}

  async start(): Promise<void> {
    if (!this.pubsub) return;
    // After a reconnect messages may have been missed: forget everything (the TTL would, later).
    await this.pubsub.subscribe(INVALIDATE, (slug) => this.drop(slug), { onResync: () => this.entries.clear() });
  }

  /** The link for a slug (null: none), from memory when fresh. */
  get(slug: string): Promise<Link | null> | Link | null {
    const e = this.entries.get(slug);
    if (e && e.until > this.clock()) return e.link;
    let p = this.loading.get(slug);
    if (!p) {
      const epoch = this.epochs.get(slug) ?? 0;
      p = this.store.bySlug(slug).then(
        (link) => {
          this.loading.delete(slug);
          if ((this.epochs.get(slug) ?? 0) === epoch) {
            if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
            this.entries.set(slug, { link, until: this.clock() + (link ? this.ttlMs : Math.min(MISS_TTL_MS, this.ttlMs)) });
          }
          return link;
        },
        (err: unknown) => {
          this.loading.delete(slug);
          throw err;
        },
      );
      this.loading.set(slug, p);
    }
    return p;
  }

  /** A link changed: every instance forgets these slugs (the old and the new one on a slug change). */
  async invalidate(...slugs: string[]): Promise<void> {
    for (const s of slugs) this.drop(s);
    if (!this.pubsub) return;
    for (const s of slugs) {
      await this.pubsub.publish(INVALIDATE, s).catch((err: Error) => {
        this.log.warn({ err: err.message, slug: s }, 'short link change not published; other instances keep the old link until their cache TTL');
      });
    }
  }

  private drop(slug: string): void {
    this.entries.delete(slug);
    this.loading.delete(slug);
    this.epochs.set(slug, (this.epochs.get(slug) ?? 0) + 1);
  }
}
