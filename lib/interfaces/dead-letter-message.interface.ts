/** Why an entry left the hot path. */
export type DeadLetterReason = 'decode_error' | 'max_deliveries' | 'non_retryable' | 'rejected';

/** What a `@DeadLetter` method receives. */
export interface DeadLetterMessage {
  /**
   * `'decode_error'` (undecodable entry), `'max_deliveries'` (poison pill, or a failure on the last
   * allowed delivery), `'non_retryable'` (the handler threw a `NonRetryableError`) or `'rejected'`
   * (a guard or pipe of the Nest pipeline refused it).
   */
  readonly reason: DeadLetterReason;
  /** Source stream: a partitioned stream's own name (`orders`), never a partition's (`orders:p:3`). */
  readonly stream: string;
  /** Source group. */
  readonly group: string;
  /** The consumer that dead-lettered it. */
  readonly consumer: string;
  /** The source entry id. */
  readonly entryId: string;
  /** The branded id, when the entry carried one. */
  readonly id: string | undefined;
  /** Delivery count when it was dead-lettered. */
  readonly attempts: number;
  /** The raw field map of the entry. */
  readonly fields: Readonly<Record<string, string>>;
  /**
   * Decode error text, the rejection's message, or the last handler error this process saw for the
   * entry, when known. At most 8 KiB of UTF-8: a longer text is cut between two characters and
   * ends in `... [cut: N more bytes]` (docs/dead-letters.md).
   */
  readonly error: string | undefined;
  /**
   * The partition the entry was read from, on a partitioned stream (docs/partitions.md "Dead
   * letters"); absent on a plain stream.
   * @default undefined
   */
  readonly partition?: number;
  /**
   * The entry's partition key (its `pkey` field), on a partitioned stream; absent on a plain
   * stream and for an entry without a key.
   * @default undefined
   */
  readonly key?: string;
}
