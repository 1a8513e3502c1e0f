/**
 * The read-only role of the dashboard and the CLI beyond `StreamQueries` (re-exported by
 * stream-roles.ts, the surfaces' one door to lib/redis). A leaf: types only.
 */
import type { RawEntry } from '../connection';

/** One page of stream keys found by `SCAN ... TYPE stream`. */
export interface StreamKeysPage {
  /** The cursor for the next call; `'0'` once the whole keyspace was scanned. */
  cursor: string;
  keys: string[];
}

/** The stream's `entries-added` and each group's `entries-read` (XINFO; `null` where not reported). */
export interface StreamCounters {
  entriesAdded: number | null;
  entriesRead: Map<string, number | null>;
}

/**
 * The read-only commands the dashboard and the CLI need beyond `StreamQueries`: newest-first reads,
 * entries by id, reads without a group, the stream counters, the keyspace's stream keys, a key's type.
 */
export interface StreamBrowsing {
  /** XREVRANGE `stream` `end` `start` COUNT `count`: newest first; `end` may be exclusive (`'(1-0'`). */
  revRange(stream: string, end: string, start: string, count: number): Promise<RawEntry[]>;
  /** The entries with ids `ids` (ascending); an id the stream no longer holds maps to `null`. */
  entriesByIds(stream: string, ids: readonly string[]): Promise<Map<string, string[] | null>>;
  /** XREAD BLOCK (no group): entries after `afterId`, waiting up to `blockMs` for the first. */
  readAfter(stream: string, afterId: string, blockMs: number, count: number): Promise<RawEntry[]>;
  /** XREAD BLOCK (no group) of several streams, each after its id: the entries by stream. */
  readAfterEach(
    cursors: ReadonlyArray<readonly [stream: string, afterId: string]>,
    blockMs: number,
    count: number,
  ): Promise<Map<string, RawEntry[]>>;
  /** XINFO STREAM `entries-added` and XINFO GROUPS `entries-read`. */
  counters(stream: string): Promise<StreamCounters>;
  /** One SCAN step over keys of type stream. */
  scanStreams(cursor: string, count: number): Promise<StreamKeysPage>;
  /** TYPE of `key`: `'none'` when it does not exist. */
  keyType(key: string): Promise<string>;
}

/** A client that also browses (the dashboard's and the CLI's): `browser()` on the same link. */
export interface Browsing {
  browser(): StreamBrowsing;
}
