/**
 * lib/stats/partition-pages.ts without Redis: a paging cursor is checked against the stream it
 * pages (an id alone on a plain stream, `<id>@<partition>` with a partition it has on a
 * partitioned one), its error never echoes the input; `streams` folds a partitioned stream's
 * partition keys into its own name only when its stored count covers them.
 */
import {
  isPageCursor,
  PageCursorError,
  readPageCursor,
  streamsByName,
} from '../../lib/stats/partition-pages';

describe('readPageCursor', () => {
  it('a plain stream takes an entry id; a partitioned one <id>@<partition> below its count', () => {
    expect(readPageCursor('1700-3', null)).toEqual({ entryId: '1700-3' });
    expect(readPageCursor('1700-3@2', 3)).toEqual({ entryId: '1700-3', partition: 2 });
    for (const [after, partitions] of [
      ['1700-3@0', null],
      ['1700-3', 3],
      ['1700-3@3', 3],
      ['1700-3@12345', 3],
      ['1700@1', 3],
      ['<img src=x>@1', 3],
      ['1700-3@1\u202E', 3],
      ['', null],
    ] as const) {
      expect(() => readPageCursor(after, partitions)).toThrow(PageCursorError);
      try {
        readPageCursor(after, partitions);
      } catch (err) {
        expect((err as Error).message).toMatch(/^after/);
        expect((err as Error).message).not.toContain('img');
        expect((err as Error).message).not.toContain('\u202E');
      }
    }
    expect(['1-0', '1-0@7', '1-0@', '1-0@1@2', 'x'].map(isPageCursor)).toEqual([
      true,
      true,
      false,
      false,
      false,
    ]);
  });
});

describe('streamsByName', () => {
  it('folds the partitions a stored count covers into the stream name, once; leaves the rest', async () => {
    const counts: Record<string, number> = { orders: 3, ledger: 2 };
    const asked: string[] = [];
    const storedCount = async (stream: string) => {
      asked.push(stream);
      return counts[stream] ?? null;
    };
    const keys = ['orders:p:2', 'plain', 'orders:p:0', 'ledger:p:5', 'other:p:0', 'ledger:p:1'];
    expect(await streamsByName(keys, storedCount)).toEqual([
      { stream: 'ledger', partitions: 2 },
      // beyond ledger's count: a key of its own
      { stream: 'ledger:p:5', partitions: null },
      { stream: 'orders', partitions: 3 },
      // no stored count: not a partitioned stream
      { stream: 'other:p:0', partitions: null },
      { stream: 'plain', partitions: null },
    ]);
    // one look-up per candidate name
    expect(asked.sort()).toEqual(['ledger', 'orders', 'other']);
  });
});
