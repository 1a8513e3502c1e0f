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
}

/** One consumer of a group, as Redis reports it. */
export interface GroupConsumerInfo {
  readonly name: string;
  readonly pending: number;
  readonly idleMs: number;
}

/** Live figures of a group, read from Redis on demand. */
export interface GroupInspection {
  /** Entries in the group's PEL. */
  readonly pending: number;
  /** Entries not yet delivered to the group; `null` where the server cannot tell. */
  readonly lag: number | null;
  readonly consumers: GroupConsumerInfo[];
  /** Age (ms) of the oldest pending entry; `null` when none. */
  readonly oldestPendingMs: number | null;
  /** Length of the dead-letter stream (0 when it does not exist). */
  readonly deadLetters: number;
}
