import { StreamBrowser } from '../redis/stream-browser';
import type { RedisStreamsClient } from '../redis/streams-client';

/** Most letters one count reads (newest first); past it the counts are of the newest ones. */
export const MAX_COUNTED_LETTERS = 10_000;

/** Letters per XREVRANGE page: small, as a letter may carry a long error text. */
const PAGE = 100;

/** Dead letters of one source stream in one dead-letter stream, by the group that gave up. */
export interface DeadLetterCounts {
  /** Letters of the source stream (every group's). */
  total: number;
  byGroup: Map<string, number>;
  /** `false` when the dead-letter stream held more than {@link MAX_COUNTED_LETTERS} letters. */
  exact: boolean;
}

/**
 * Counts a stream's dead letters per group: a dead-letter stream is shared by the groups of a
 * stream (and may be by streams), each letter naming its `dlq_stream` and `dlq_group`, so the
 * count reads the letters, newest first, at most {@link MAX_COUNTED_LETTERS} of them. The
 * answer is kept while the dead-letter stream's length and newest id are unchanged, so a page
 * refreshing every 2 s costs one XLEN and one XREVRANGE COUNT 1 per stream (internal).
 */
export class DeadLetterCounter {
  private readonly cache = new Map<string, { mark: string; counts: DeadLetterCounts }>();

  async count(
    client: RedisStreamsClient,
    deadLetterStream: string,
    stream: string,
  ): Promise<DeadLetterCounts> {
    const browser = new StreamBrowser(client.connection);
    const [length, newest] = await Promise.all([
      client.length(deadLetterStream),
      browser.revRange(deadLetterStream, '+', '-', 1),
    ]);
    const mark = `${length}\u0000${newest[0]?.entryId ?? ''}`;
    const key = `${deadLetterStream}\u0000${stream}`;
    const cached = this.cache.get(key);
    if (cached?.mark === mark) return cached.counts;
    const counts: DeadLetterCounts = { total: 0, byGroup: new Map(), exact: true };
    let end = '+';
    for (let read = 0; read < Math.min(length, MAX_COUNTED_LETTERS);) {
      const page = await browser.revRange(deadLetterStream, end, '-', PAGE);
      for (const entry of page) tally(counts, entry.fields ?? [], stream);
      read += page.length;
      if (page.length < PAGE) break;
      end = `(${page[page.length - 1].entryId}`;
    }
    counts.exact = length <= MAX_COUNTED_LETTERS;
    this.cache.set(key, { mark, counts });
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
