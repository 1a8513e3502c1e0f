import type { StreamTransaction } from './stream-transaction.interface';

/** One stream entry handed to a `@StreamHandler` method. */
export interface StreamMessage<T = unknown> {
  /** The branded id: the entry's `id` field (the producer's receipt); the entry id when absent. */
  readonly id: string;
  /** The Redis stream entry id, e.g. `1700000000000-0`. */
  readonly entryId: string;
  /** The stream key it was read from. */
  readonly stream: string;
  /** The consumer group. */
  readonly group: string;
  /** This process's consumer name in the group. */
  readonly consumer: string;
  /** The decoded payload. */
  readonly payload: T;
  /** Delivery count from the group's PEL: 1 on first delivery, +1 per reclaim. */
  readonly attempts: number;
  /** Aborted when the application shuts down. */
  readonly signal: AbortSignal;
  /**
   * A partitioned stream (`partitions`): the partition the entry was read from; `undefined` on a
   * plain stream. See docs/partitions.md.
   */
  readonly partition?: number;
  /** A partitioned stream: the entry's key (its `pkey` field, set by `publish(s, p, { key })`). */
  readonly key?: string;
  /**
   * A partitioned stream: the generation of this process's lease on the partition, growing on
   * every take-over; a handler can fence its own writes with it (docs/partitions.md "Limits").
   */
  readonly leaseGeneration?: number;
  /**
   * The last value `saveCheckpoint` stored for this entry in an earlier delivery (a retry, or a
   * reclaim after a crash, in any process); `undefined` on a first delivery or when none was
   * saved. See docs/delivery.md "Checkpoints".
   */
  readonly checkpoint?: unknown;
  /**
   * Stores `value` (JSON) for this entry, so its next delivery resumes from it (`checkpoint`);
   * the record goes away with the entry's XACK or dead letter. One HSET per call.
   * See docs/delivery.md "Checkpoints".
   */
  saveCheckpoint(value: unknown): Promise<void>;
  /**
   * With `exactlyOnce: true`: the entry's writes (publish, set, incrBy, hset, del), committed
   * with its acknowledgement when the handler returns, none when it throws. Without it, every
   * method throws a `TypeError` saying so. See docs/exactly-once.md.
   */
  readonly tx: StreamTransaction;
}

/** What a batch-mode handler returns: the messages (or entry ids) to acknowledge. */
export type BatchAcks = ReadonlyArray<StreamMessage<unknown> | string> | null | undefined;
