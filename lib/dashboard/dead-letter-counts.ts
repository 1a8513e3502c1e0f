import type { Browsing, StreamBrowsing, StreamQueries } from '../redis/stream-roles';

/** What counting needs of the client: XLEN and XRANGE, and browsing on the same link. */
type CountingClient = Pick<StreamQueries, 'length' | 'range'> & Browsing;

/** Most letters one full count reads (newest first); past it the counts are of the newest ones. */
export const MAX_COUNTED_LETTERS = 10_000;

/** Letters per XRANGE page: few, as a letter may carry a long error text. */
const PAGE = 20;

/** Dead letters of one source stream in one dead-letter stream, by the group that gave up. */
export interface DeadLetterCounts {
  /** Letters of the source stream (every group's). */
  total: number;
  byGroup: Map<string, number>;
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
 * Counts a stream's dead letters per group: a dead-letter stream is shared by the groups of a
 * stream (and may be by streams), each letter naming its `dlq_stream` and `dlq_group`, so the
 * count has to read the letters. It reads them once, newest first, at most
 * {@link MAX_COUNTED_LETTERS}; then, while the dead-letter stream only grows, only the letters
 * added since; unchanged, nothing (one XLEN and one XREVRANGE COUNT 1 per overview). A delete, a
 * redrive or a trim makes it count again (internal).
 */
export class DeadLetterCounter {
  private readonly cache = new Map<string, Counted>();

  async count(
    client: CountingClient,
    deadLetterStream: string,
    stream: string,
  ): Promise<DeadLetterCounts> {
    const browser = client.browser();
    const [length, newest] = await Promise.all([
      client.length(deadLetterStream),
      browser.revRange(deadLetterStream, '+', '-', 1),
    ]);
    const newestId = newest[0]?.entryId;
    const key = `${deadLetterStream}\u0000${stream}`;
    const cached = this.cache.get(key);
    if (cached?.length === length && cached.newestId === newestId) return cached.counts;
    const counted =
      (cached && (await this.countAdded(client, deadLetterStream, stream, cached, length))) ??
      (await this.countAll(browser, deadLetterStream, stream, length));
    this.cache.set(key, { length, newestId, counts: counted });
    return counted;
  }

  /** The cached counts plus the letters added after them; `undefined` when more than that changed. */
  private async countAdded(
    client: CountingClient,
    deadLetterStream: string,
    stream: string,
    cached: Counted,
    length: number,
  ): Promise<DeadLetterCounts | undefined> {
    const added = length - cached.length;
    if (cached.newestId === undefined || added <= 0 || added > MAX_COUNTED_LETTERS)
      return undefined;
    const counts: DeadLetterCounts = { ...cached.counts, byGroup: new Map(cached.counts.byGroup) };
    let start = `(${cached.newestId}`;
    let read = 0;
    for (;;) {
      const page = await client.range(deadLetterStream, start, '+', PAGE);
      for (const entry of page) tally(counts, entry.fields ?? [], stream);
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
    stream: string,
    length: number,
  ): Promise<DeadLetterCounts> {
    const counts: DeadLetterCounts = {
      total: 0,
      byGroup: new Map(),
      exact: length <= MAX_COUNTED_LETTERS,
    };
    let end = '+';
    for (let read = 0; read < Math.min(length, MAX_COUNTED_LETTERS);) {
      const want = Math.min(PAGE, MAX_COUNTED_LETTERS - read);
      const page = await browser.revRange(deadLetterStream, end, '-', want);
      for (const entry of page) tally(counts, entry.fields ?? [], stream);
      read += page.length;
      if (page.length < want) break;
      end = `(${page[page.length - 1].entryId}`;
    }
    return counts;
  }
}

function tally(counts: DeadLetterCounts, fields: readonly string[], stream: string): void {
  let source: string | undefined;
  let group: string | undefined;
  for (let i = 0; i + 1 < fields.length; i += 2) {
    if (fields[i] === 'dlq_stream') source = fields[i + 1];
    else if (fields[i] === 'dlq_group') group = fields[i + 1];
  }
  if (source !== undefined && source !== stream) return;
  counts.total++;
  if (group !== undefined) counts.byGroup.set(group, (counts.byGroup.get(group) ?? 0) + 1);
}
