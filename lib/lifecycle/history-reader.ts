import { brandedIdOf, decodeEntry, errorText, fieldsToRecord } from '../codec/codecs';
import type { StreamCodec } from '../interfaces/codec.interface';
import type { HistoryEntry, HistoryOptions } from '../interfaces/lifecycle.interface';
import { compareEntryIds, entryIdMs, isEntryId } from '../codec/entry-id';
import type { LifecycleClient } from '../redis/operator';
import { MergedRange } from './merged-range';

/** Entries read per XRANGE while iterating the history. */
export const HISTORY_PAGE_SIZE = 500;

const MAX_SEQ = '18446744073709551615';
const HISTORY_OPTION_NAMES: readonly string[] = ['from', 'to', 'count', 'codec'];

/** The XRANGE window of a history query (internal). */
export interface HistoryWindow {
  /** Inclusive start, `ms-seq`. */
  start: string;
  /** Inclusive end, `ms-seq` or `+`. */
  end: string;
  /** How many entries to yield at most. */
  count: number;
}

/**
 * Checks the options of `EchoStreamAdmin.history()` and turns them into an XRANGE window.
 * @throws TypeError naming the option on a bad bound or count, or when `from` is after `to`.
 */
export function historyWindow(stream: unknown, options: HistoryOptions): HistoryWindow {
  const where = 'EchoStreamAdmin.history()';
  if (typeof stream !== 'string' || stream.length === 0) {
    throw new TypeError(`${where}: stream must be a non-empty string, got ${describe(stream)}`);
  }
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`${where}: options must be an object, got ${describe(options)}`);
  }
  for (const key of Object.keys(options)) {
    if (!HISTORY_OPTION_NAMES.includes(key)) {
      throw new TypeError(
        `${where}: unknown option '${key}' (known: ${HISTORY_OPTION_NAMES.join(', ')})`,
      );
    }
  }
  const start = options.from === undefined ? '0-0' : bound(where, 'from', options.from, '0');
  const end = options.to === undefined ? '+' : bound(where, 'to', options.to, MAX_SEQ);
  if (end !== '+' && compareEntryIds(start, end) > 0) {
    throw new TypeError(
      `${where}: 'from' (${describe(options.from)}) is after 'to' (${describe(options.to)}) on stream '${stream}'`,
    );
  }
  const { count } = options;
  if (
    count !== undefined &&
    (typeof count !== 'number' || !Number.isSafeInteger(count) || count < 0)
  ) {
    throw new TypeError(`${where}: option 'count' must be an integer >= 0, got ${describe(count)}`);
  }
  return { start, end, count: count ?? Number.POSITIVE_INFINITY };
}

/**
 * Yields the entries of `window`, oldest first, one XRANGE page at a time: only the current page
 * is held in memory, however long the stream.
 */
export async function* readHistory<T>(
  client: Pick<LifecycleClient, 'range'>,
  stream: string,
  window: HistoryWindow,
  codec: StreamCodec<unknown>,
  pageSize = HISTORY_PAGE_SIZE,
): AsyncGenerator<HistoryEntry<T>, void, undefined> {
  let start = window.start;
  let left = window.count;
  while (left > 0) {
    const want = Math.min(pageSize, left);
    const page = await client.range(stream, start, window.end, want);
    for (const entry of page) {
      if (entry.fields === null) continue;
      yield toHistoryEntry<T>(entry.entryId, entry.fields, codec);
    }
    left -= page.length;
    if (page.length < want) return;
    // NOTE: exclusive range start '(' needs Redis >= 6.2 (the package's minimum).
    start = `(${page[page.length - 1].entryId}`;
  }
}

/**
 * Yields the entries of `window` of a partitioned stream (docs/operations.md "History"), its
 * partitions' `streams` merged in entry-id order (an id found in two partitions, the lower
 * partition first), each with its `partition`; at most one page per partition in memory.
 */
export async function* readMergedHistory<T>(
  client: Pick<LifecycleClient, 'range'>,
  streams: readonly string[],
  window: HistoryWindow,
  codec: StreamCodec<unknown>,
  pageSize = HISTORY_PAGE_SIZE,
): AsyncGenerator<HistoryEntry<T>, void, undefined> {
  const range = new MergedRange(client, streams, window.start, window.end, pageSize);
  let left = window.count;
  while (left > 0) {
    const step = await range.next();
    if (step.length === 0) return;
    for (const { part, entry } of step) {
      if (entry.fields === null) continue;
      yield toHistoryEntry<T>(entry.entryId, entry.fields, codec, part);
      if (--left === 0) return;
    }
  }
}

function toHistoryEntry<T>(
  entryId: string,
  flat: readonly string[],
  codec: StreamCodec<unknown>,
  partition?: number,
): HistoryEntry<T> {
  const base = {
    entryId,
    id: brandedIdOf(flat) ?? entryId,
    fields: fieldsToRecord(flat),
    at: new Date(entryIdMs(entryId)),
    ...(partition === undefined ? {} : { partition }),
  };
  try {
    // a partition's `pkey` field is the module's, not the codec's
    return { ...base, payload: decodeEntry(codec, flat, partition !== undefined).payload as T };
  } catch (err) {
    return { ...base, payload: undefined, decodeError: errorText(err) };
  }
}

/** A `Date` or an entry id -> a complete entry id; `seq` fills an ms-only bound. */
function bound(where: string, option: string, value: unknown, seq: string): string {
  if (value instanceof Date) {
    const ms = value.getTime();
    if (!Number.isFinite(ms) || ms < 0) {
      throw new TypeError(`${where}: option '${option}' is an invalid Date`);
    }
    return `${ms}-${seq}`;
  }
  if (typeof value === 'string' && isEntryId(value)) {
    return value.includes('-') ? value : `${value}-${seq}`;
  }
  throw new TypeError(
    `${where}: option '${option}' must be a Date or an entry id like '1700000000000-0', got ${describe(value)}`,
  );
}

function describe(value: unknown): string {
  if (value instanceof Date)
    return Number.isNaN(value.getTime()) ? 'Invalid Date' : value.toISOString();
  if (typeof value === 'string') return `'${value}'`;
  if (value === null || value === undefined) return String(value);
  if (typeof value === 'object') return Array.isArray(value) ? 'an array' : 'an object';
  return `${typeof value} ${String(value)}`;
}
