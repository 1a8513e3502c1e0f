/**
 * What rides with a loop's XACK (docs/ARCHITECTURE.md "Handle and settle"): writes about the acked
 * entries sent in its round trip, and the records behind `dedup` and `newerWins` (docs/delivery.md
 * "Duplicates and stale replays") written in the same script call. A leaf of types, as
 * stream-roles.ts.
 */

/**
 * A write about acked entries sent in the round trip of their XACK (right behind it on the same
 * connection): records that live as long as their entry is pending.
 */
export type AlongAck =
  /** HDEL of the entries' checkpoints. */
  | { readonly kind: 'dropCheckpoints'; readonly entryIds: readonly string[] }
  /**
   * `deleteOnAck` (docs/delivery.md "Deleting acknowledged entries"): the entries removed from
   * the stream with their XACK; with `ackedByAll`, only those no other group of the stream still
   * holds or has yet to read.
   */
  | {
      readonly kind: 'deleteEntries';
      readonly entryIds: readonly string[];
      readonly ackedByAll: boolean;
    };

/** One look of {@link EntryDeletions.sweep}. */
export interface DeletionSweep {
  /** Entries it removed. */
  readonly deleted: number;
  /** Where the next look starts (after this id); `null`: from the oldest entry again. */
  readonly next: string | null;
  /** How many groups the stream has (0 when it or its groups are gone). */
  readonly groups: number;
}

/**
 * `deleteOnAck: 'acked-by-all'`: removes the entries every group of a stream has acknowledged
 * that no ack of the last group to acknowledge removed (that group does not delete on ack).
 */
export interface EntryDeletions {
  /**
   * Looks at up to `count` entries after `after` (`null`: the oldest), up to the oldest of the
   * groups' last delivered ids, and removes those no group holds; one script call.
   */
  sweep(stream: string, after: string | null, count: number): Promise<DeletionSweep>;
}

/** A record written with an entry's XACK (see {@link SkipRecords}). */
export type SkipRecord =
  /** Dedup: branded id `id` was acked by the group; kept `ttlMs`. */
  | { kind: 'acked'; id: string; ttlMs: number }
  /** Newer-wins: `id` is the newest branded id acked for entity `key`, unless a newer one is. */
  | { kind: 'newest'; key: string; id: string; ttlMs: number };

/** What a skip filter asks: was this branded id acked, which is the newest id of this entity. */
export type SkipQuery = { kind: 'acked'; id: string } | { kind: 'newest'; key: string };

/**
 * The records behind `dedup` and `newerWins` (docs/delivery.md "Duplicates and stale replays"),
 * kept in the stream's hash slot.
 */
export interface SkipRecords {
  /**
   * XACK of `ids` and `records` in one atomic script call (EVALSHA, EVAL on NOSCRIPT): a record
   * is written with its entry's ack, never without it. Resolves to how many entries XACK
   * acknowledged.
   */
  ackRecording(
    stream: string,
    group: string,
    ids: readonly string[],
    records: readonly SkipRecord[],
    along?: readonly AlongAck[],
  ): Promise<number>;
  /** The records asked for, in one MGET: the branded id held, `null` for none. */
  readRecords(
    stream: string,
    group: string,
    queries: readonly SkipQuery[],
  ): Promise<Array<string | null>>;
}
