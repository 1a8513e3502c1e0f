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
}

/** What a batch-mode handler returns: the messages (or entry ids) to acknowledge. */
export type BatchAcks = ReadonlyArray<StreamMessage<unknown> | string> | null | undefined;
