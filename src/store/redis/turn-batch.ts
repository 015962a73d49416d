/**
 * Calls of one event-loop turn gathered by group and handed over together when the turn ends (setImmediate), so a
 * busy key costs one Redis script per turn instead of one per call. Used by the token bucket and the rate windows.
 */
export class TurnBatch<G> {
  private groups = new Map<string, G>();
  private scheduled = false;

  constructor(private readonly flush: (groups: ReadonlyMap<string, G>) => void) {}

  /** The group of this turn with that id, if one was started. */
  get(id: string): G | undefined {
    return this.groups.get(id);
  }

  /** Starts a group for this turn; the first one schedules the flush. */
  add(id: string, group: G): void {
    this.groups.set(id, group);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.run);
    }
  }

  private readonly run = (): void => {
    this.scheduled = false;
    const groups = this.groups;
    this.groups = new Map();
    this.flush(groups);
  };
}
