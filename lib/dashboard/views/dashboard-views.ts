import type {
  ConsumerState,
  GroupConsumerInfo,
} from '../../interfaces/consumer-snapshot.interface';
import type { RateSeries } from './rate-history';

/** JSON of `GET {path}/api/overview`. */
export interface OverviewView {
  /** When the figures were read (ISO 8601). */
  at: string;
  readOnly: boolean;
  streams: StreamView[];
}

/** One stream of the overview. */
export interface StreamView {
  stream: string;
  /** XLEN (0 when the key does not exist). */
  length: number;
  groups: GroupView[];
  /** Dead letters of this stream, every group's (each group's own count is on its row). */
  deadLetters: number;
  /**
   * `false` when a dead-letter stream of this stream held more than 10,000 letters: the counts
   * (the stream's and each group's) are then of the newest 10,000 only.
   */
  deadLettersExact: boolean;
  /**
   * Entries ever added to the stream (XINFO STREAM `entries-added`, Redis >= 7): with `length`,
   * tells the page its tail changed even when a capped stream keeps its length. `null` where the
   * server does not report it, and for a stream without groups.
   */
  entriesAdded: number | null;
  /** Why the stream could not be read (e.g. the key is not a stream); figures are then 0. */
  error?: string;
}

/** One group of a stream, as Redis and (when this app consumes it) the app's loop see it. */
export interface GroupView {
  group: string;
  /** The state of this app's loop for the group; `null` when the app runs none. */
  state: ConsumerState | null;
  /**
   * Since when the group is paused on the stream (ISO 8601; `EchoStreamAdmin.pause`), for every
   * process; `null` when it is not.
   */
  pausedSince: string | null;
  /** `'Class.method'` of this app's handler, when it runs one. */
  handler: string | null;
  consumers: GroupConsumerInfo[];
  /** The last entry id delivered to the group: with `pending`, tells the page its PEL changed. */
  lastDeliveredId: string;
  pending: number;
  lag: number | null;
  oldestPendingMs: number | null;
  /** Dead letters this group gave up on (their `dlq_group`), not the other groups'. */
  deadLetters: number;
  /**
   * Entries this app's loop acked without a handler call as duplicates (`dedup`: the group had
   * acked their branded id), since the loop started; `null` when the app runs no loop of the
   * group (docs/delivery.md "Duplicates and stale replays").
   */
  totalDuplicates: number | null;
  /**
   * Entries this app's loop acked without a handler call as stale replays (`newerWins`: not
   * newer than their key's highest acked id), since the loop started; `null` as
   * `totalDuplicates`.
   */
  totalStale: number | null;
  /**
   * `exactlyOnce` commits this app's loop saw refused since it started, nothing written (the entry
   * had become another consumer's); `null` as `totalDuplicates`.
   */
  totalFenced: number | null;
  /**
   * Entries read per second by this app's loop; for a group the app does not consume, entries
   * added to the stream per second (Redis >= 7). `null` until two overview reads a second apart.
   */
  tpsIn: number | null;
  /**
   * Entries acknowledged per second by this app's loop; for a group the app does not consume,
   * entries delivered to the group per second (Redis >= 7). `null` as `tpsIn`.
   */
  tpsOut: number | null;
  /** The last minute of `tpsIn` / `tpsOut`, one sample per overview read at most every second. */
  sparkline: RateSeries;
  /**
   * A partitioned stream (docs/partitions.md "Visible"): each partition's owner, lease and
   * figures; the group's `pending` and `lag` are their sums, `oldestPendingMs` their oldest.
   * Absent for a plain stream.
   */
  partitions?: PartitionView[];
}

/** One partition of a partitioned stream's group, on the dashboard. */
export interface PartitionView {
  partition: number;
  /** The consumer holding its lease; `null` when free or expired. */
  owner: string | null;
  generation: number;
  /** Ms its lease has left. */
  leftMs: number;
  /** Entries in the partition's stream. */
  length: number;
  pending: number;
  lag: number | null;
  oldestPendingMs: number | null;
  /** The stream's dead letters that came from this partition (every group's). */
  deadLetters: number;
  /** The state of this app's loop of the partition; `null` when this process does not own it. */
  state: ConsumerState | null;
  /** Entries this app's loop of the partition read per second; `null` as `state`. */
  tpsIn: number | null;
  /** Entries this app's loop of the partition acknowledged per second; `null` as `state`. */
  tpsOut: number | null;
}

/** One row of a group's PEL. */
export interface PendingEntryView {
  entryId: string;
  /**
   * The partition the entry is of, on a partitioned stream (its PELs merged oldest first);
   * absent on a plain stream.
   */
  partition?: number;
  consumer: string;
  idleMs: number;
  deliveries: number;
  /** The entry's fields as `k=v` text, cut at 200 characters; `null` when it was deleted. */
  preview: string | null;
  /** Whether a value was cut to fit (`…` marks the cut). */
  cut: boolean;
}

/** JSON of `GET .../groups/:group/pending`. */
export interface PendingPageView {
  stream: string;
  group: string;
  /** Entries in the whole PEL (every partition's, on a partitioned stream). */
  pending: number;
  entries: PendingEntryView[];
  /**
   * `?after=` of the next page; `null` on the last page. A page holds at most `count` entries
   * and 1 MiB of JSON: it ends early (with `next` set) rather than grow. On a partitioned stream
   * `<entry id>@<partition>` (two partitions may hold the same id).
   */
  next: string | null;
}

/** One dead letter. */
export interface DeadLetterView {
  entryId: string;
  deadLetterStream: string;
  /** Why it was dead-lettered (cut at 512 characters). */
  reason: string;
  /** The handler's error text, cut at 8192 characters. */
  error: string | null;
  group: string;
  sourceEntryId: string;
  /** The partition it came from, on a partitioned stream; `null` on a plain stream. */
  partition: number | null;
  /** Its partition key, on a partitioned stream (cut at 512 characters); `null` when none. */
  key: string | null;
  attempts: number;
  /** When it was dead-lettered (ISO 8601). */
  at: string;
  /** The original fields as `k=v` text, cut at 200 characters. */
  preview: string;
  /** Whether a value (error, preview, a name) was cut to fit (`…` marks the cut). */
  cut: boolean;
}

/** JSON of `GET .../dead-letters`. */
export interface DeadLetterPageView {
  stream: string;
  entries: DeadLetterView[];
  /** `?after=` of the next page, as {@link PendingPageView.next}. */
  next: string | null;
}

/** One entry of the stream's tail. */
export interface TailEntryView {
  entryId: string;
  /**
   * The partition the entry is of, on a partitioned stream (its partitions merged newest first);
   * absent on a plain stream.
   */
  partition?: number;
  /** The fields as `k=v` text, cut at 200 characters. */
  preview: string;
  /** Whether the preview was cut (`…` marks the cut). */
  cut: boolean;
}

/** JSON of `GET .../entries`: the newest entries first; `next` continues with older ones. */
export interface TailPageView {
  stream: string;
  /** Entries in the stream (its partitions' summed, on a partitioned stream). */
  length: number;
  entries: TailEntryView[];
  /** `?after=` of the next (older) page, as {@link PendingPageView.next}. */
  next: string | null;
}
