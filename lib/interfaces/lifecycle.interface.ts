import type { CodecOption } from './codec.interface';

/**
 * One stream's retention rule (module option `retention`). At least one of `maxAgeMs` and
 * `maxLen` is required; an entry is trimmed when it is older than `maxAgeMs` OR beyond the newest
 * `maxLen`, and only when no group of the stream still needs it.
 * @see docs/operations.md "Retention and archive"
 */
export interface RetentionRule {
  /** The stream to trim. */
  stream: string;
  /**
   * Trim entries whose entry id time is older than this (ms).
   * @default none (no age limit)
   */
  maxAgeMs?: number;
  /**
   * Keep at most the newest `maxLen` entries (more while a group still needs older ones).
   * @default none (no length limit)
   */
  maxLen?: number;
  /**
   * Groups that must not hold the trim back (e.g. an abandoned group nobody reads any more).
   * @default []
   */
  ignoreGroups?: string[];
}

/** Retention figures of one stream, as `ConsumerStats.retention(stream)` reports them. */
export interface RetentionReport {
  /** The stream. */
  readonly stream: string;
  /** Entries trimmed by THIS process since it started. */
  readonly trimmedTotal: number;
  /**
   * The group whose oldest unacknowledged entry (undelivered or pending) keeps entries the rule
   * would trim, as of the last run; `null` when nothing is held back.
   */
  readonly heldBackBy: string | null;
  /** The oldest entry id left in the stream (`null`: empty or missing), as of the last run. */
  readonly oldestEntryId: string | null;
  /** XLEN of the stream, as of the last run. */
  readonly length: number;
  /** When the last run ended (`null`: none yet). */
  readonly lastRunAt: Date | null;
}

/** One entry handed to a `@StreamArchive` method before it is trimmed. */
export interface ArchivedEntry {
  /** The Redis stream entry id. */
  readonly entryId: string;
  /** The branded id (the entry's `id` field); the entry id when absent. */
  readonly id: string;
  /** Every field of the entry, raw. */
  readonly fields: Readonly<Record<string, string>>;
  /** The time of the entry id (when Redis added it). */
  readonly at: Date;
  /**
   * The partition it is trimmed from, for a rule on a partitioned stream (a page holds every
   * partition's entries in entry-id order; the same entry id may be in two partitions, so an
   * archive is idempotent on `partition` and `entryId`); absent on a plain stream.
   * @default undefined
   */
  readonly partition?: number;
}

/** Options of `EchoStreamAdmin.history()`. */
export interface HistoryOptions {
  /**
   * First entry, inclusive: a `Date` (entries added at or after it) or an entry id.
   * @default the oldest entry
   */
  from?: Date | string;
  /**
   * Last entry, inclusive: a `Date` (entries added at or before it) or an entry id.
   * @default the newest entry (as of each page read)
   */
  to?: Date | string;
  /**
   * Yield at most this many entries in all.
   * @default every entry in the window
   */
  count?: number;
  /**
   * How to decode payloads.
   * @default the codec of this app's handler of the stream, else the module `defaults.codec`, else `'json'`
   */
  codec?: CodecOption;
}

/** One entry as `EchoStreamAdmin.history()` yields it. */
export interface HistoryEntry<T = unknown> {
  /** The Redis stream entry id. */
  readonly entryId: string;
  /** The branded id (the entry's `id` field); the entry id when absent. */
  readonly id: string;
  /** The decoded payload; `undefined` when the codec could not decode the entry (see `decodeError`). */
  readonly payload: T | undefined;
  /** Every field of the entry, raw (always present). */
  readonly fields: Readonly<Record<string, string>>;
  /** The time of the entry id (when Redis added it). */
  readonly at: Date;
  /** Why the payload is `undefined`, when the codec failed. */
  readonly decodeError?: string;
  /**
   * The partition it is in, when the history is of a partitioned stream (its partitions merged
   * in entry-id order; the same entry id may be in two partitions); absent on a plain stream.
   * @default undefined
   */
  readonly partition?: number;
}

/** Handler option `consumerCleanup`. */
export interface ConsumerCleanupOptions {
  /**
   * A consumer of the group idle longer than this (ms) and holding no pending entries is deleted.
   * @default 86400000 (one day)
   */
  idleMs: number;
}
