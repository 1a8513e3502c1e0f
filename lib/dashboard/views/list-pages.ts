import type { PendingRow, StreamBrowsing, StreamsClient } from '../../redis/stream-roles';
import {
  entriesNewestFirst,
  partitionCursorText,
  pendingAcross,
  pendingOfGroup,
  type PartitionCursor,
} from '../../stats/partition-pages';
import { partitionGroups, readPartitions } from '../../stats/partitioned-inspection';
import type {
  PendingEntryView,
  PendingPageView,
  TailEntryView,
  TailPageView,
} from './dashboard-views';
import { cutText, MAX_NAME_CHARS, PageBudget, previewFields } from './page-budget';

/** Entry bodies read per round trip for a PEL or tail page. */
const BODIES_PER_READ = 100;

/** A page asked for: at most `count` rows after `after` (a partitioned stream's cursor carries its partition). */
export interface ListPageQuery {
  count: number;
  after?: { entryId: string; partition?: number };
}

/** What a page of a list reads. */
export type ListSources = Pick<StreamsClient, 'groups' | 'length' | 'pending'> & {
  browser(): Pick<StreamBrowsing, 'revRange' | 'entriesByIds'>;
};

/** A PEL row with the stream it is of (a partition's, on a partitioned stream). */
type Row = { partition?: number; stream: string; item: PendingRow };

/** A list route's answer for a group the stream does not have. */
export class NoSuchGroup extends Error {}

/**
 * One page of `group`'s pending entries on `stream` (`partitions`: its partition count, `null`
 * for a plain stream): each row with its consumer, idle time, deliveries and a preview of its
 * body; on a partitioned stream the partitions' PELs merged oldest first, each row with its
 * partition (docs/operations.md "Dashboard"). Bounded as every page (`PageBudget`).
 * @throws NoSuchGroup when the stream has no such group.
 */
export async function pendingPage(
  client: ListSources,
  stream: string,
  partitions: number | null,
  group: string,
  page: ListPageQuery,
): Promise<PendingPageView> {
  let pending: number;
  let rows: AsyncIterable<Row>;
  if (partitions === null) {
    const info = (await client.groups(stream)).find((g) => g.name === group);
    if (!info) throw new NoSuchGroup();
    pending = info.pending;
    const plain = await client.pending(stream, group, {
      start: page.after === undefined ? '-' : `(${page.after.entryId}`,
      end: '+',
      count: page.count,
    });
    rows = plainItems(stream, plain);
  } else {
    const read = await readPartitions(client, stream, partitions);
    if (!partitionGroups(read).includes(group)) throw new NoSuchGroup();
    pending = pendingOfGroup(read, group);
    rows = pendingAcross(client, read, group, page.count, cursorOf(page));
  }
  const browser = client.browser();
  const out = new PageBudget<PendingEntryView>(page.count, rowCursor);
  // bodies a chunk at a time, each turned into a preview at once: a page of large entries
  // never sits whole in memory
  const left = () => (out.done ? 0 : Math.min(BODIES_PER_READ, page.count - out.entries.length));
  for await (const chunk of chunks(rows, left)) {
    const bodies = await bodiesOf(browser, chunk);
    for (const { partition, stream: of, item: row } of chunk) {
      const fields = bodies.get(of)?.get(row.entryId);
      const shown = fields ? previewFields(fields) : undefined;
      const consumer = cutText(row.consumer, MAX_NAME_CHARS);
      const view: PendingEntryView = {
        ...row,
        ...(partition === undefined ? {} : { partition }),
        consumer: consumer.text,
        preview: shown?.text ?? null,
        cut: consumer.cut || shown?.cut === true,
      };
      if (!out.add(view)) break;
    }
  }
  return { stream, group, pending, entries: out.entries, next: out.next };
}

/**
 * One page of `stream`'s entries, newest first, before `after`; on a partitioned stream its
 * partitions merged newest first, each row with its partition, `length` their lengths summed.
 */
export async function tailPage(
  client: ListSources,
  stream: string,
  partitions: number | null,
  page: ListPageQuery,
): Promise<TailPageView> {
  const browser = client.browser();
  const out = new PageBudget<TailEntryView>(page.count, rowCursor);
  if (partitions !== null) {
    const read = await readPartitions(client, stream, partitions);
    const length = read.lengths.reduce((sum, n) => sum + n, 0);
    for await (const { partition, item } of entriesNewestFirst(
      browser,
      read,
      page.count,
      cursorOf(page),
    )) {
      const shown = previewFields(item.fields ?? []);
      if (!out.add({ entryId: item.entryId, partition, preview: shown.text, cut: shown.cut }))
        break;
      if (out.done) break;
    }
    return { stream, length, entries: out.entries, next: out.next };
  }
  let end = page.after === undefined ? '+' : `(${page.after.entryId}`;
  const length = await client.length(stream);
  while (!out.done) {
    const want = Math.min(BODIES_PER_READ, page.count - out.entries.length);
    const batch = await browser.revRange(stream, end, '-', want);
    for (const entry of batch) {
      const shown = previewFields(entry.fields ?? []);
      if (!out.add({ entryId: entry.entryId, preview: shown.text, cut: shown.cut })) break;
    }
    if (batch.length < want) break;
    end = `(${batch[batch.length - 1].entryId}`;
  }
  return { stream, length, entries: out.entries, next: out.next };
}

/** `?after=` of the page after a row: its entry id, `@<partition>` on a partitioned stream. */
function rowCursor(row: { entryId: string; partition?: number }): string {
  return row.partition === undefined
    ? row.entryId
    : partitionCursorText(row.entryId, row.partition);
}

function cursorOf(page: ListPageQuery): PartitionCursor | undefined {
  const after = page.after;
  return after?.partition === undefined
    ? undefined
    : { entryId: after.entryId, partition: after.partition };
}

async function* plainItems(stream: string, rows: readonly PendingRow[]): AsyncGenerator<Row> {
  for (const item of rows) yield { stream, item };
}

/** `items` in arrays of up to `size()` (0: the page takes no more). */
async function* chunks<T>(
  items: AsyncIterable<T>,
  size: () => number,
): AsyncGenerator<T[], void, undefined> {
  let chunk: T[] = [];
  let want = size();
  if (want <= 0) return;
  for await (const item of items) {
    chunk.push(item);
    if (chunk.length < want) continue;
    yield chunk;
    chunk = [];
    want = size();
    if (want <= 0) return;
  }
  if (chunk.length > 0) yield chunk;
}

/** The bodies of a chunk's rows, by stream (one `entriesByIds` per stream, in parallel). */
async function bodiesOf(
  browser: Pick<StreamBrowsing, 'entriesByIds'>,
  chunk: ReadonlyArray<{ stream: string; item: PendingRow }>,
): Promise<Map<string, Map<string, string[] | null>>> {
  const idsOf = new Map<string, string[]>();
  for (const { stream, item } of chunk) {
    const ids = idsOf.get(stream) ?? [];
    ids.push(item.entryId);
    idsOf.set(stream, ids);
  }
  const found = await Promise.all(
    [...idsOf].map(
      async ([stream, ids]) => [stream, await browser.entriesByIds(stream, ids)] as const,
    ),
  );
  return new Map(found);
}
