import type { Cluster } from 'ioredis';

/** How often the slot map is asked for again while a node is lost. */
export const TOPOLOGY_POLL_MS = 200;
/** How long after a node was lost the slot map is still asked for (no change by then: stop). */
export const TOPOLOGY_WATCH_MS = 60_000;

/**
 * Tells its listeners when a Cluster's slot map changes: which node serves which slots (a replica
 * promoted, a slot moved). A loop backing off through a failover hears it and retries at once
 * instead of sleeping out its backoff (docs/scale.md "Redis Cluster").
 *
 * Why it asks: ioredis learns a new map only when a command meets MOVED or a refresh is asked
 * for, and a loop sleeping in its backoff sends nothing; worse, its commands go on to the lost
 * master's address (a connection refused is no MOVED). So once a node connection is lost
 * (`-node`), the map is asked for every {@link TOPOLOGY_POLL_MS} (CLUSTER SLOTS on a live node)
 * until it changes, at most {@link TOPOLOGY_WATCH_MS}. Every successful refresh (`refresh`, the
 * watch's own or one a MOVED started) is compared with the map known before.
 */
export class TopologyWatch {
  private readonly listeners = new Set<() => void>();
  private known: string | undefined;
  private poll: NodeJS.Timeout | undefined;
  private pollUntil = 0;
  private closed = false;

  constructor(
    private readonly cluster: Cluster,
    private readonly pollMs = TOPOLOGY_POLL_MS,
    private readonly watchMs = TOPOLOGY_WATCH_MS,
  ) {
    if (cluster.status === 'ready') this.known = slotMap(cluster);
    cluster.on('refresh', () => this.compare());
    cluster.on('-node', () => this.nodeLost());
    cluster.once('end', () => this.close());
  }

  /** Calls `listener` each time the slot map changed; returns what stops it. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Stops asking (the connection is closed). */
  close(): void {
    this.closed = true;
    clearTimeout(this.poll);
    this.poll = undefined;
  }

  private nodeLost(): void {
    if (this.closed) return;
    this.pollUntil = Date.now() + this.watchMs;
    if (!this.poll) this.schedule();
  }

  private schedule(): void {
    this.poll = setTimeout(() => {
      this.poll = undefined;
      if (this.closed || Date.now() > this.pollUntil) return;
      // a failed refresh (no node answers yet) is asked again at the next tick
      this.cluster.refreshSlotsCache(() => {
        if (!this.closed && this.pollUntil > 0) this.schedule();
      });
    }, this.pollMs);
    this.poll.unref?.();
  }

  private compare(): void {
    const now = slotMap(this.cluster);
    const before = this.known;
    this.known = now;
    if (before === undefined || before === now) return;
    this.pollUntil = 0; // the change came: stop asking
    clearTimeout(this.poll);
    this.poll = undefined;
    for (const listener of [...this.listeners]) listener();
  }
}

/** Which node serves each slot, as one comparable text (ranges of one owner). */
function slotMap(cluster: Cluster): string {
  const ranges: string[] = [];
  let owner: string | undefined;
  cluster.slots.forEach((nodes, slot) => {
    const master = nodes?.[0];
    if (master !== owner) ranges.push(`${slot}:${master ?? '-'}`);
    owner = master;
  });
  return ranges.join(' ');
}
