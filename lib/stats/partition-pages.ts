import { compareEntryIds } from '../codec/entry-id';
import { partitionNameOf } from '../codec/partition-key';
import { MergedPages } from '../lifecycle/merged-range';
import type { PendingRow, RawEntry, StreamBrowsing, StreamsClient } from '../redis/stream-roles';
import type { PartitionsRead } from './partitioned-inspection';

// The lists of a partitioned stream read as one (docs/partitions.md "Visible"): its group's
// pending entries and its entries, merged across its partitions in entry-id order, each item with
// the partition it is of. Two partitions are two Redis streams, so one entry id can be in both:
// a position in the merged list is an id AND a partition, written `<entry id>@<partition>`. The
// one module the CLI, the dashboard and the admin read these lists through.

/** Where a page of a partitioned stream's list continues: after this entry of this partition. */
export interface PartitionCursor {
  readonly entryId: string;
  readonly partition: number;
}

/** An item of a partitioned stream's list, with where it is. */
export interface PartitionItem<T> {
  readonly partition: number;
  /** The partition's Redis stream (`<stream>:p:<partition>`). */
  readonly stream: string;
  readonly item: T;
}

/**
 * Items read per step in all, at least (each partition's page its share, at least 10); a caller
 * that takes more sizes the step to what it takes, so a page drawn from one partition costs
 * about `partitions` steps, not `taken / 10`.
 */
const MERGE_PAGE = 100;

/**
 * Stream keys as their users name them: the partitions of a partitioned stream (`orders:p:3`,
 * and `orders` has a stored count that covers 3) become its own name once, with its count; any
 * other key stays itself (`partitions` null). Sorted by name.
 */
export async function streamsByName(
  keys: Iterable<string>,
  storedCount: (stream: string) => Promise<number | null>,
): Promise<Array<{ stream: string; partitions: number | null }>> {
  const candidates = new Map<string, Promise<number | null>>();
  const named = [...keys].map((key) => ({ key, as: partitionNameOf(key) }));
  for (const { as } of named) {
    if (as && !candidates.has(as.stream)) candidates.set(as.stream, storedCount(as.stream));
  }
  const out = new Map<string, number | null>();
  for (const { key, as } of named) {
    const count = as ? await candidates.get(as.stream) : null;
    if (as && count !== null && count !== undefined && as.index < count) out.set(as.stream, count);
    else if (!out.has(key)) out.set(key, null);
  }
  return [...out]
    .map(([stream, partitions]) => ({ stream, partitions }))
    .sort((a, b) => (a.stream < b.stream ? -1 : a.stream > b.stream ? 1 : 0));
}

/** `<entry id>@<partition>`: a paging cursor of a partitioned stream's list. */
export function partitionCursorText(entryId: string, partition: number): string {
  return `${entryId}@${partition}`;
}

/** A paging cursor refused: the text says why, for a 400 or a CLI error line. */
export class PageCursorError extends Error {}

/** A cursor as typed: an entry id, optionally `@<partition>` (syntax only; no 2^64 check). */
const CURSOR = /^(\d{1,20}-\d{1,20})(?:@(\d{1,4}))?$/;

/** Whether `text` has the shape of a paging cursor: `<ms>-<seq>` or `<ms>-<seq>@<partition>`. */
export function isPageCursor(text: string): boolean {
  return CURSOR.test(text);
}

/**
 * `after` of a list checked against the stream it pages: a plain stream (`partitions` null)
 * takes an entry id; a partitioned stream `<entry id>@<partition>` with a partition below its
 * count (an id alone does not say which partition it is of).
 * @throws PageCursorError naming what is wrong (the typed text is not echoed: it is hostile).
 */
export function readPageCursor(
  after: string,
  partitions: number | null,
): { entryId: string; partition?: number } {
  const match = CURSOR.exec(after);
  if (match === null) {
    throw new PageCursorError(
      'after must be an entry id like 1700000000000-0, or <entry id>@<partition> on a partitioned stream',
    );
  }
  const [, entryId, partition] = match;
  if (partitions === null) {
    if (partition !== undefined)
      throw new PageCursorError('after: <entry id>@<partition> pages a partitioned stream only');
    return { entryId };
  }
  if (partition === undefined || Number(partition) >= partitions) {
    throw new PageCursorError(
      `after must be <entry id>@<partition> with a partition from 0 to ${partitions - 1}`,
    );
  }
  return { entryId, partition: Number(partition) };
}

/** The entries in `group`'s PELs on the partitions `read` found, summed. */
export function pendingOfGroup(read: PartitionsRead, group: string): number {
  return read.groupsOf.reduce(
    (sum, groups) => sum + (groups.find((g) => g.name === group)?.pending ?? 0),
    0,
  );
}

/**
 * The pending entries of `group` on the partitions `read` found, oldest first across them (an id
 * in two partitions: the lower partition first), after `after`. Only partitions whose PEL holds
 * something are read, each a page at a time as the caller takes more (`want`: about how many it
 * means to take).
 */
export async function* pendingAcross(
  client: Pick<StreamsClient, 'pending'>,
  read: PartitionsRead,
  group: string,
  want: number,
  after?: PartitionCursor,
): AsyncGenerator<PartitionItem<PendingRow>, void, undefined> {
  const partitions = read.streams.flatMap((_, i) =>
    (read.groupsOf[i].find((g) => g.name === group)?.pending ?? 0) > 0 ? [i] : [],
  );
  yield* merged(read, partitions, {
    read: (stream, from, to, count) =>
      client.pending(stream, group, { start: from, end: to, count }),
    // after (id, p): a partition up to p continues past the id, one after p at the id itself
    from: (p) => (after === undefined ? '-' : past(after, p <= after.partition)),
    to: '+',
    want,
  });
}

/**
 * The entries of the partitions `read` found, newest first across them (an id in two
 * partitions: the higher partition first), before `before`. Only partitions holding entries are
 * read, each a page at a time as the caller takes more (`want`: as {@link pendingAcross}).
 */
export async function* entriesNewestFirst(
  browser: Pick<StreamBrowsing, 'revRange'>,
  read: PartitionsRead,
  want: number,
  before?: PartitionCursor,
): AsyncGenerator<PartitionItem<RawEntry>, void, undefined> {
  const partitions = read.streams.flatMap((_, i) => (read.lengths[i] > 0 ? [i] : []));
  yield* merged(read, partitions, {
    read: (stream, from, to, count) => browser.revRange(stream, from, to, count),
    // before (id, p): a partition from p up continues below the id, one under p at the id itself
    from: (p) => (before === undefined ? '+' : past(before, p >= before.partition)),
    to: '-',
    want,
    newestFirst: true,
  });
}

/**
 * One wait for new entries of every partition (XREAD BLOCK of their streams, each after its own
 * last id): what came, oldest first across them (an id in two partitions: the lower first).
 * `lastIds` (by partition) moves on to the last entry read of each.
 */
export async function entriesAfter(
  browser: Pick<StreamBrowsing, 'readAfterEach'>,
  streams: readonly string[],
  lastIds: string[],
  blockMs: number,
  count: number,
): Promise<Array<PartitionItem<RawEntry>>> {
  const got = await browser.readAfterEach(
    streams.map((stream, i) => [stream, lastIds[i]] as const),
    blockMs,
    count,
  );
  const out: Array<PartitionItem<RawEntry>> = [];
  streams.forEach((stream, partition) => {
    const entries = got.get(stream) ?? [];
    for (const item of entries) out.push({ partition, stream, item });
    if (entries.length > 0) lastIds[partition] = entries[entries.length - 1].entryId;
  });
  return out.sort(
    (a, b) => compareEntryIds(a.item.entryId, b.item.entryId) || a.partition - b.partition,
  );
}

/** The cursor's id as a range bound: `(id` (exclusive) or `id` itself. */
function past(cursor: PartitionCursor, exclusive: boolean): string {
  return exclusive ? `(${cursor.entryId}` : cursor.entryId;
}

/** The lists of `partitions` merged ({@link MergedPages}), yielded one item at a time. */
async function* merged<T extends { readonly entryId: string }>(
  read: PartitionsRead,
  partitions: readonly number[],
  how: {
    read(stream: string, from: string, to: string, count: number): Promise<T[]>;
    from(partition: number): string;
    to: string;
    want: number;
    newestFirst?: boolean;
  },
): AsyncGenerator<PartitionItem<T>, void, undefined> {
  const streams = partitions.map((p) => read.streams[p]);
  const pages = new MergedPages<T>({
    read: how.read,
    streams,
    from: partitions.map((p) => how.from(p)),
    to: how.to,
    pageSize: Math.max(MERGE_PAGE, how.want),
    newestFirst: how.newestFirst,
  });
  for (let step = await pages.next(); step.length > 0; step = await pages.next()) {
    for (const { part, entry } of step)
      yield { partition: partitions[part], stream: streams[part], item: entry };
  }
}
