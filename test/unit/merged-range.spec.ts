/**
 * MergedRange (lib/lifecycle/merged-range.ts): several streams read as one, in entry-id order,
 * a page of each at a time; nothing skipped, nothing twice, an id found in two streams in the
 * order of the streams, whatever the page size. Canned streams, no Redis.
 */
import { compareEntryIds } from '../../lib/codec/entry-id';
import { MergedPages, MergedRange } from '../../lib/lifecycle/merged-range';
import type { RawEntry } from '../../lib/redis/stream-roles';

/** XRANGE over in-memory streams: `-`, `(id` and `ms-seq` starts, `+` or `ms-seq` ends. */
function client(streams: Record<string, string[]>) {
  const reads: string[] = [];
  return {
    reads,
    range: async (stream: string, start: string, end: string, count: number) => {
      reads.push(`${stream} ${start} ${count}`);
      const exclusive = start.startsWith('(');
      const from = exclusive ? start.slice(1) : start;
      return (streams[stream] ?? [])
        .filter(
          (id) =>
            start === '-' ||
            (exclusive ? compareEntryIds(id, from) > 0 : compareEntryIds(id, from) >= 0),
        )
        .filter((id) => end === '+' || compareEntryIds(id, end) <= 0)
        .slice(0, count)
        .map((id): RawEntry => ({ entryId: id, fields: ['id', `${stream}/${id}`] }));
    },
  };
}

async function drain(range: MergedRange): Promise<string[]> {
  const out: string[] = [];
  for (let step = await range.next(); step.length > 0; step = await range.next())
    out.push(...step.map(({ part, entry }) => `${entry.entryId}@${part}`));
  return out;
}

describe('MergedRange', () => {
  it('merges by entry id across pages; an id in two streams comes in the order of the streams', async () => {
    const ids = (n: number, every: number, offset: number) =>
      Array.from({ length: n }, (_, i) => `${i * every + offset}-0`);
    const streams = { a: ids(40, 3, 1), b: ids(25, 5, 1), c: ['2-0', '1000-0'] };
    const expected = Object.entries(streams)
      .flatMap(([name, list], part) => list.map((id) => ({ id, part, name })))
      .sort((x, y) => compareEntryIds(x.id, y.id) || x.part - y.part)
      .map(({ id, part }) => `${id}@${part}`);
    for (const pageSize of [1, 7, 30, 1000]) {
      const fake = client(streams);
      const range = new MergedRange(fake, ['a', 'b', 'c'], '-', '+', pageSize);
      expect(await drain(range)).toEqual(expected);
    }
  });

  it('reads within the bounds, each stream from where it was left, one page at a time', async () => {
    const fake = client({ a: ['1-0', '5-0', '9-0', '12-0'], b: ['3-0', '5-0', '11-0'] });
    const range = new MergedRange(fake, ['a', 'b'], '4-0', '11-0', 20);
    expect(await drain(range)).toEqual(['5-0@0', '5-0@1', '9-0@0', '11-0@1']);
    // a page of 10 per stream: each read once, its end seen
    expect(fake.reads).toEqual(['a 4-0 10', 'b 4-0 10']);
  });

  it('newest first, each stream from its own start: an id in two streams in the reverse order of the streams', async () => {
    const streams: Record<string, string[]> = {
      a: ['1-0', '5-0', '9-0', '12-0'],
      b: ['3-0', '5-0', '11-0', '12-0'],
      c: ['2-0', '5-0', '7-0'],
    };
    // XREVRANGE over the canned streams: `+`, `(id` and `ms-seq` ends (from), `-` starts
    const read = async (stream: string, from: string, _to: string, count: number) => {
      const exclusive = from.startsWith('(');
      const bound = exclusive ? from.slice(1) : from;
      return [...streams[stream]]
        .reverse()
        .filter(
          (id) =>
            from === '+' ||
            (exclusive ? compareEntryIds(id, bound) < 0 : compareEntryIds(id, bound) <= 0),
        )
        .slice(0, count)
        .map((id): RawEntry => ({ entryId: id, fields: [] }));
    };
    const drainPages = async (from: string[], pageSize: number) => {
      const pages = new MergedPages<RawEntry>({
        read,
        streams: ['a', 'b', 'c'],
        from,
        to: '-',
        pageSize,
        newestFirst: true,
      });
      const out: string[] = [];
      for (let step = await pages.next(); step.length > 0; step = await pages.next())
        out.push(...step.map(({ part, entry }) => `${entry.entryId}@${part}`));
      return out;
    };
    for (const pageSize of [1, 25, 1000]) {
      expect(await drainPages(['+', '+', '+'], pageSize)).toEqual([
        '12-0@1',
        '12-0@0',
        '11-0@1',
        '9-0@0',
        '7-0@2',
        '5-0@2',
        '5-0@1',
        '5-0@0',
        '3-0@1',
        '2-0@2',
        '1-0@0',
      ]);
      // continuing after 5-0@1: stream a still has 5-0, b and c do not
      expect(await drainPages(['5-0', '(5-0', '(5-0'], pageSize)).toEqual([
        '5-0@0',
        '3-0@1',
        '2-0@2',
        '1-0@0',
      ]);
    }
  });
});
