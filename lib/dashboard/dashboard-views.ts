import type { ConsumerState, GroupConsumerInfo } from '../interfaces/consumer-snapshot.interface';
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
  /** The largest dead-letter count of its groups. */
  deadLetters: number;
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
  /** `'Class.method'` of this app's handler, when it runs one. */
  handler: string | null;
  consumers: GroupConsumerInfo[];
  /** The last entry id delivered to the group: with `pending`, tells the page its PEL changed. */
  lastDeliveredId: string;
  pending: number;
  lag: number | null;
  oldestPendingMs: number | null;
  deadLetters: number;
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
}

/** One row of a group's PEL. */
export interface PendingEntryView {
  entryId: string;
  consumer: string;
  idleMs: number;
  deliveries: number;
  /** The entry's fields as `k=v` text, cut at 200 characters; `null` when it was deleted. */
  preview: string | null;
}

/** JSON of `GET .../groups/:group/pending`. */
export interface PendingPageView {
  stream: string;
  group: string;
  /** Entries in the whole PEL. */
  pending: number;
  entries: PendingEntryView[];
  /** `?after=` of the next page; `null` on the last page. */
  next: string | null;
}

/** One dead letter. */
export interface DeadLetterView {
  entryId: string;
  deadLetterStream: string;
  reason: string;
  error: string | null;
  group: string;
  sourceEntryId: string;
  attempts: number;
  /** When it was dead-lettered (ISO 8601). */
  at: string;
  preview: string;
}

/** JSON of `GET .../dead-letters`. */
export interface DeadLetterPageView {
  stream: string;
  entries: DeadLetterView[];
  next: string | null;
}

/** One entry of the stream's tail. */
export interface TailEntryView {
  entryId: string;
  preview: string;
}

/** JSON of `GET .../entries`: the newest entries first; `next` continues with older ones. */
export interface TailPageView {
  stream: string;
  length: number;
  entries: TailEntryView[];
  next: string | null;
}
