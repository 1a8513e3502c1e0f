/** Lifecycle state of one handler loop. */
export type ConsumerState =
  | 'starting'
  | 'running'
  /** Its group is paused on its stream (`EchoStreamAdmin.pause`): it reads and starts nothing. */
  | 'paused'
  | 'degraded'
  | 'stopping'
  | 'stopped';

/** Live figures of one handler loop, read from counters the loop owns. */
export interface ConsumerSnapshot {
  readonly stream: string;
  readonly group: string;
  readonly consumer: string;
  /** `'Class.method'`. */
  readonly handler: string;
  readonly state: ConsumerState;
  /** Entries read: new + reclaimed + drained from the own PEL. */
  readonly totalRead: number;
  /** Entries acknowledged after their handler succeeded. */
  readonly totalAcked: number;
  /** Entries dead-lettered: decode errors + poison pills. */
  readonly totalDlq: number;
  /** Handler failures. */
  readonly totalErrors: number;
  /** Pending entries found already deleted from the stream (acked, never handed on). */
  readonly totalDeleted: number;
  /** Entries acked without a handler call: their branded id was acked already (`dedup`). */
  readonly totalDuplicates: number;
  /** Entries acked without a handler call: not newer than the newest of their key (`newerWins`). */
  readonly totalStale: number;
  /**
   * `exactlyOnce` entries whose commit was refused, nothing written: the entry had become another
   * consumer's (a reclaim, a partition's new owner), or was delivered again, while its handler ran.
   */
  readonly totalFenced: number;
  /** Failed entries waiting for their retry in this process now. */
  readonly retrying: number;
  /** Retries scheduled since the loop started. */
  readonly totalRetries: number;
  /** Entries read per second over the last 10 s. */
  readonly tpsIn: number;
  /** Entries acknowledged per second over the last 10 s. */
  readonly tpsOut: number;
  /** The last error text (Redis or handler), if any; at most 8 KiB, cut like a dead letter's. */
  readonly lastError: string | null;
  /**
   * A partitioned stream (`partitions`): the partitions this process owns now, with the generation
   * of its lease on each; absent on a plain stream. See docs/partitions.md.
   */
  readonly partitions?: readonly OwnedPartitionInfo[];
}

/** A partition this process owns (docs/partitions.md). */
export interface OwnedPartitionInfo {
  readonly partition: number;
  /** The generation of the lease (grows on every take-over). */
  readonly generation: number;
  /**
   * Entries of the partition not yet delivered to the group, as of the last check (every 2 s);
   * `null` before the first one or where the server cannot tell.
   */
  readonly lag: number | null;
  /** The state of the partition's loop here (`starting` until it is up). */
  readonly state: ConsumerState;
  /** Entries the partition's loop read per second over the last 10 s. */
  readonly tpsIn: number;
  /** Entries the partition's loop acknowledged per second over the last 10 s. */
  readonly tpsOut: number;
  /** Entries the partition's loop acknowledged after their handler succeeded, since it started. */
  readonly totalAcked: number;
  /** Handler failures of the partition's loop since it started. */
  readonly totalErrors: number;
}

/** One consumer of a group, as Redis reports it. */
export interface GroupConsumerInfo {
  readonly name: string;
  readonly pending: number;
  readonly idleMs: number;
}

/**
 * Live figures of a group, read from Redis on demand. On a partitioned stream (docs/partitions.md
 * "Visible") they are its partitions' summed (`consumers`: each consumer's pending summed, its
 * smallest idle time; `oldestPendingMs`: the oldest over the partitions), with `partitions`.
 */
export interface GroupInspection {
  /** Entries in the group's PEL. */
  readonly pending: number;
  /** Entries not yet delivered to the group; `null` where the server cannot tell. */
  readonly lag: number | null;
  readonly consumers: GroupConsumerInfo[];
  /** Age (ms) of the oldest pending entry; `null` when none. */
  readonly oldestPendingMs: number | null;
  /**
   * Length of the dead-letter stream (0 when it does not exist). On a partitioned stream: its
   * letters in its dead-letter stream (every group's, the newest 10,000 counted at most), which
   * its partitions' `deadLetters` split.
   */
  readonly deadLetters: number;
  /**
   * A partitioned stream: the group on each of its partitions, by partition index; absent on a
   * plain stream.
   * @default undefined
   */
  readonly partitions?: readonly PartitionInspection[];
}

/** One partition of a partitioned stream's group, as `ConsumerStats.inspect()` reads it. */
export interface PartitionInspection {
  readonly partition: number;
  /** Its Redis stream, `<stream>:p:<partition>`. */
  readonly stream: string;
  /** The consumer holding its lease; `null` when free or expired. */
  readonly owner: string | null;
  /** The generation of its lease (grows on every take-over). */
  readonly generation: number;
  /** Ms its lease has left (0 when free or expired). */
  readonly leaseLeftMs: number;
  /** Entries in the partition's stream (XLEN). */
  readonly length: number;
  /** Entries of the partition in the group's PEL. */
  readonly pending: number;
  /** Entries of the partition not yet delivered to the group; `null` where the server cannot tell. */
  readonly lag: number | null;
  /** Age (ms) of the partition's oldest pending entry; `null` when none. */
  readonly oldestPendingMs: number | null;
  /** The stream's dead letters that came from this partition (every group's). */
  readonly deadLetters: number;
}
