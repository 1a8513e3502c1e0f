/** One entry of a dead-letter stream, as `EchoStreamAdmin.deadLetters()` lists it. */
export interface DeadLetterEntry {
  /** The dead-letter stream this entry lives in. */
  readonly deadLetterStream: string;
  /** Its entry id in the dead-letter stream. */
  readonly entryId: string;
  /** `dlq_reason`: normally `'decode_error'` or `'max_deliveries'`; `''` when absent. */
  readonly reason: string;
  /**
   * `dlq_stream`: the source stream. A partitioned stream's letter names the stream itself
   * (`orders`), also one written with its partition's name (`orders:p:3`) before this field
   * named the stream.
   */
  readonly stream: string;
  /** `dlq_group`: the group that dead-lettered it; `''` when absent. */
  readonly group: string;
  /** `dlq_entry_id`: the entry id in the source stream; `''` when absent. */
  readonly sourceEntryId: string;
  /** `dlq_attempts`: the delivery count when it was dead-lettered (0 when absent). */
  readonly attempts: number;
  /**
   * `dlq_error`: the decode error or last handler error, when known; at most 8 KiB, a longer text
   * cut and marked `... [cut: N more bytes]` (entries written since that bound existed).
   */
  readonly error: string | undefined;
  /** `dlq_at`: when it was dead-lettered (the dead-letter entry's id time when absent). */
  readonly at: Date;
  /** The branded id (the original `id` field), when present. */
  readonly id: string | undefined;
  /** The original fields (the `id` field included), without any `dlq_*` field. */
  readonly fields: Readonly<Record<string, string>>;
  /**
   * `dlq_partition`: the partition it came from, on a partitioned stream (for an older letter,
   * the partition its `dlq_stream` names); absent on a plain stream.
   * @default undefined
   */
  readonly partition?: number;
  /**
   * `dlq_key`: its partition key, on a partitioned stream (the entry's `pkey`); absent on a
   * plain stream and on a letter written without it.
   * @default undefined
   */
  readonly key?: string;
}

/** Options of `EchoStreamAdmin.redrive()`. */
export interface RedriveOptions {
  /** Only dead letters of this group (`dlq_group`); every group when absent. */
  group?: string;
  /**
   * At most this many dead letters, oldest first.
   * @default every matching dead letter
   */
  count?: number;
  /** Only these dead letters (ids in the dead-letter stream). @default every matching one */
  entryIds?: readonly string[];
}

/** Options of `EchoStreamAdmin.deadLetters()`. */
export interface DeadLetterQueryOptions {
  /** Only dead letters of this group (`dlq_group`); every group when absent. */
  group?: string;
  /**
   * At most this many dead letters, oldest first.
   * @default 100
   */
  count?: number;
  /** Only dead letters after this dead-letter entry id (the next page). @default from the start */
  after?: string;
}
