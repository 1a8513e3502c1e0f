import { parseDeadLetter } from '../codec/dead-letter-fields';
import { letterSource, type DeadLetterScope } from '../codec/dead-letter-scope';
import type { Browsing, StreamBrowsing, StreamQueries } from '../redis/stream-roles';

/** What counting needs of the client: XLEN and XRANGE, and browsing on the same link. */
type CountingClient = Pick<StreamQueries, 'length' | 'range'> & Browsing;

/** Most letters one full count reads (newest first); past it the counts are of the newest ones. */
export const MAX_COUNTED_LETTERS = 10_000;

/** Letters per XRANGE page: few, as a letter may carry a long error text. */
const PAGE = 20;

/** Dead letters of one source stream in one dead-letter stream, by group and by partition. */
export interface DeadLetterCounts {
  /** Letters of the source stream (every group's). */
  total: number;
  /** By the group that gave up (`dlq_group`). */
  byGroup: Map<string, number>;
  /** On a partitioned stream: by the partition they came from (letters of every group). */
  byPartition: Map<number, number>;
  /** `false` when the dead-letter stream held more than {@link MAX_COUNTED_LETTERS} letters. */
  exact: boolean;
}

/** A count and the dead-letter stream as it was when counted. */
interface Counted {
  length: number;
  newestId: string | undefined;
  counts: DeadLetterCounts;
}

/**
 * Counts a stream's dead letters per group and per partition: a dead-letter stream is shared by
 * the groups of a stream (and may be by streams), each letter naming its `dlq_stream`,
 * `dlq_group` and on a partitioned stream `dlq_partition`, so the count has to read the letters;
 * which letters are the stream's is its {@link DeadLetterScope}'s say. It reads them once, newest first, at most
 * {@link MAX_COUNTED_LETTERS}; then, while the dead-letter stream only grows, only the letters
 * added since; unchanged, nothing (one XLEN and one XREVRANGE COUNT 1 per overview). A delete, a
 * redrive or a trim makes it count again (internal).
 */
export class DeadLetterCounter {
  private readonly cache = new Map<string, Counted>();

  async count(
    client: CountingClient,
    deadLetterStream: string,
    scope: DeadLetterScope,
  ): Promise<DeadLetterCounts> {
    const browser = client.browser();
    const [length, newest] = await Promise.all([
      client.length(deadLetterStream),
      browser.revRange(deadLetterStream, '+', '-', 1),
    ]);
    const newestId = newest[0]?.entryId;
    const key = `${deadLetterStream}\u0000${scope.asked}\u0000${scope.partitions}`;
    const cached = this.cache.get(key);
    if (cached?.length === length && cached.newestId === newestId) return cached.counts;
    const counted =
      (cached && (await this.countAdded(client, deadLetterStream, scope, cached, length))) ??
      (await this.countAll(browser, deadLetterStream, scope, length));
    this.cache.set(key, { length, newestId, counts: counted });
    return counted;
  }

  /** The cached counts plus the letters added after them; `undefined` when more than that changed. */
  private async countAdded(
    client: CountingClient,
    deadLetterStream: string,
    scope: DeadLetterScope,
    cached: Counted,
    length: number,
  ): Promise<DeadLetterCounts | undefined> {
    const added = length - cached.length;
    if (cached.newestId === undefined || added <= 0 || added > MAX_COUNTED_LETTERS)
      return undefined;
    const counts: DeadLetterCounts = {
      ...cached.counts,
      byGroup: new Map(cached.counts.byGroup),
      byPartition: new Map(cached.counts.byPartition),
    };
    let start = `(${cached.newestId}`;
    let read = 0;
    for (;;) {
      const page = await client.range(deadLetterStream, start, '+', PAGE);
      for (const entry of page) tally(counts, entry.fields ?? [], scope);
      read += page.length;
      if (page.length < PAGE || read > added) break;
      start = `(${page[page.length - 1].entryId}`;
    }
    // letters were also removed (or the newest counted one is gone): count again
    return read === added ? counts : undefined;
  }

  private async countAll(
    browser: StreamBrowsing,
    deadLetterStream: string,
    scope: DeadLetterScope,
    length: number,
  ): Promise<DeadLetterCounts> {
    const counts: DeadLetterCounts = {
      total: 0,
      byGroup: new Map(),
      byPartition: new Map(),
      exact: length <= MAX_COUNTED_LETTERS,
    };
    let end = '+';
    for (let read = 0; read < Math.min(length, MAX_COUNTED_LETTERS);) {
      const want = Math.min(PAGE, MAX_COUNTED_LETTERS - read);
      const page = await browser.revRange(deadLetterStream, end, '-', want);
      for (const entry of page) tally(counts, entry.fields ?? [], scope);
      read += page.length;
      if (page.length < want) break;
      end = `(${page[page.length - 1].entryId}`;
    }
    return counts;
  }
}

function tally(counts: DeadLetterCounts, fields: readonly string[], scope: DeadLetterScope): void {
  const letter = parseDeadLetter(fields);
  const source = letterSource(scope, letter);
  if (!source) return;
  counts.total++;
  const { group } = letter;
  if (group !== undefined) counts.byGroup.set(group, (counts.byGroup.get(group) ?? 0) + 1);
  const { partition } = source;
  if (partition !== undefined)
    counts.byPartition.set(partition, (counts.byPartition.get(partition) ?? 0) + 1);
}

/** The counts of several dead-letter streams of one stream, added up. */
export function sumCounts(all: readonly DeadLetterCounts[]): DeadLetterCounts {
  const sum: DeadLetterCounts = {
    total: 0,
    byGroup: new Map(),
    byPartition: new Map(),
    exact: true,
  };
  for (const counts of all) {
    sum.total += counts.total;
    sum.exact &&= counts.exact;
    for (const [group, n] of counts.byGroup)
      sum.byGroup.set(group, (sum.byGroup.get(group) ?? 0) + n);
    for (const [p, n] of counts.byPartition)
      sum.byPartition.set(p, (sum.byPartition.get(p) ?? 0) + n);
  }
  return sum;
}
