import type { StreamsClient } from '../../redis/stream-roles';
import { SharedGroupRead, type SharedReadMember } from './shared-read';

/** What the shared reads of one app need. */
export interface SharedReadPoolConfig {
  /** Opens a client on a new connection of its own, for one shared read. */
  openReadClient: () => StreamsClient;
  /**
   * Which read a stream's loop joins within its group: `''` on one node; on a Cluster the stream's
   * hash slot (one XREADGROUP may only name keys of one slot).
   */
  partitionOf: (stream: string) => string;
  /** The consumer name every loop of the app reads as. */
  consumer: string;
}

/**
 * The shared reads of an app's loops (docs/scale.md "Many handlers"): one {@link SharedGroupRead},
 * and so one parked connection, per group name (and Cluster slot), opened when its first loop
 * joins and closed by `close()` once every loop has stopped, or when its last loop left it
 * (partition loops come and go with their partitions).
 */
export class SharedReadPool {
  private readonly reads = new Map<string, SharedGroupRead>();

  constructor(private readonly config: SharedReadPoolConfig) {}

  /**
   * The reader the loop on `stream`/`group` waits for new entries with (it leaves the read when
   * it stops before the app, as a partition loop does); `claimIdleMs` as `SharedGroupRead.member`.
   */
  reader(group: string, stream: string, claimIdleMs?: number): SharedReadMember {
    const key = JSON.stringify([group, this.config.partitionOf(stream)]);
    let read = this.reads.get(key);
    if (!read) {
      read = new SharedGroupRead({
        client: this.config.openReadClient(),
        group,
        consumer: this.config.consumer,
      });
      this.reads.set(key, read);
    }
    const member = read.member(stream, claimIdleMs);
    const shared = read;
    return {
      ...member,
      // the last loop out closes the read (partitions moved away): a later loop opens a new one
      leave: async () => {
        await member.leave();
        if (shared.size > 0 || this.reads.get(key) !== shared) return;
        this.reads.delete(key);
        await shared.close();
      },
    };
  }

  /** Closes every shared read (after the loops stopped: none is waiting any more). */
  async close(): Promise<void> {
    const reads = [...this.reads.values()];
    this.reads.clear();
    await Promise.all(reads.map((read) => read.close()));
  }
}
