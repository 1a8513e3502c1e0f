/**
 * The skip filter before the handler (lib/consumer/skip-filter.ts), the records written with the
 * XACK (lib/consumer/ack-records.ts, lib/consumer/ack-buffer.ts) and the rules read from the
 * handler options (lib/consumer/skip-rules.ts), against a small in-memory record store.
 */
import { AckBuffer } from '../../lib/consumer/ack-buffer';
import { AckRecords } from '../../lib/consumer/ack-records';
import { NO_SKIPS, SkipFilter } from '../../lib/consumer/skip-filter';
import { skipRulesOf, type SkipRules } from '../../lib/consumer/skip-rules';
import type { StreamMessage } from '../../lib/interfaces/stream-message.interface';
import type { SkipQuery, SkipRecord } from '../../lib/redis/stream-roles';
import { G, S, testLoop } from '../support/loop-context';

/** Branded-shaped ids, increasing with `n`. */
const bid = (n: number) => `${String(n).padStart(10, '0')}000000node0001`;

function message(entryId: string, id: string, account = 'a'): StreamMessage<unknown> {
  return {
    id,
    entryId,
    stream: S,
    group: G,
    consumer: 'c1',
    payload: { account },
    attempts: 1,
    signal: new AbortController().signal,
    checkpoint: undefined,
    saveCheckpoint: () => Promise.resolve(),
  };
}

/** A record store with the semantics of the script: `acked` set, `newest` compare-and-set. */
class RecordStore {
  readonly acked = new Set<string>();
  readonly newest = new Map<string, string>();
  readonly ackCalls: Array<{ ids: readonly string[]; records: readonly SkipRecord[] }> = [];
  reads = 0;

  readRecords = async (
    _stream: string,
    _group: string,
    queries: readonly SkipQuery[],
  ): Promise<Array<string | null>> => {
    this.reads++;
    return queries.map((q) =>
      q.kind === 'acked' ? (this.acked.has(q.id) ? q.id : null) : (this.newest.get(q.key) ?? null),
    );
  };

  ack = async (_s: string, _g: string, ids: readonly string[]): Promise<number> => {
    this.ackCalls.push({ ids, records: [] });
    return ids.length;
  };

  ackRecording = async (
    _s: string,
    _g: string,
    ids: readonly string[],
    records: readonly SkipRecord[],
  ): Promise<number> => {
    this.ackCalls.push({ ids, records });
    for (const r of records) {
      if (r.kind === 'acked') this.acked.add(r.id);
      else if (!this.newest.has(r.key) || r.id > this.newest.get(r.key)!)
        this.newest.set(r.key, r.id);
    }
    return ids.length;
  };
}

const accountOf = (m: StreamMessage<never>) => (m.payload as { account: string }).account;

describe('skipRulesOf', () => {
  it('null when dedup and newerWins are off: the loop builds no filter and no records', () => {
    expect(skipRulesOf({ dedup: false, newerWins: null })).toBeNull();
  });

  it('dedup: true is a 600000 ms window, { windowMs } its own', () => {
    expect(skipRulesOf({ dedup: true, newerWins: null })?.dedupWindowMs).toBe(600_000);
    expect(skipRulesOf({ dedup: { windowMs: 5 }, newerWins: null })?.dedupWindowMs).toBe(5);
  });

  it('newerWins keys only branded ids, and a key function that throws or returns no string gives no key', () => {
    const rules = skipRulesOf({
      dedup: false,
      newerWins: (m) => {
        const account = accountOf(m);
        if (account === 'boom') throw new Error('boom');
        return account === 'num' ? (7 as unknown as string) : account;
      },
    }) as SkipRules;
    expect(rules.keyOf?.(message('1-0', bid(1), 'x'))).toBe('x');
    expect(rules.keyOf?.(message('1-0', 'custom-id', 'x'))).toBeUndefined();
    expect(rules.keyOf?.(message('1-0', bid(1), 'boom'))).toBeUndefined();
    expect(rules.keyOf?.(message('1-0', bid(1), 'num'))).toBeUndefined();
  });
});

describe('SkipFilter', () => {
  it('NO_SKIPS runs every entry', async () => {
    const got = await NO_SKIPS.filter([message('1-0', 'a'), message('2-0', 'b')]);
    expect(got).toEqual({ run: [0, 1], skipped: [] });
  });

  it('dedup: an id the group acked is skipped (counted, logged at debug), the rest run, in one read of the records', async () => {
    const loop = testLoop();
    const store = new RecordStore();
    store.acked.add('dup');
    const filter = new SkipFilter(loop.context, store, { dedupWindowMs: 1000, keyOf: undefined });
    const got = await filter.filter([
      message('1-0', 'new'),
      message('2-0', 'dup'),
      message('3-0', 'x'),
    ]);
    expect(got).toEqual({ run: [0, 2], skipped: ['2-0'] });
    expect(store.reads).toBe(1);
    expect(loop.counters.snapshot()).toMatchObject({ totalDuplicates: 1, totalStale: 0 });
    expect(loop.logger.has(/^debug T\.h on orders\/g: entry 2-0 skipped \(duplicate\)/)).toBe(true);
  });

  it('newerWins: an entry not newer than the newest acked of its key is stale; newer ones and other keys run', async () => {
    const loop = testLoop();
    const store = new RecordStore();
    store.newest.set('a', bid(5));
    const rules = skipRulesOf({ dedup: false, newerWins: accountOf }) as SkipRules;
    const filter = new SkipFilter(loop.context, store, rules);
    const got = await filter.filter([
      message('1-0', bid(4), 'a'), // older: stale
      message('2-0', bid(5), 'a'), // the same: stale
      message('3-0', bid(6), 'a'), // newer: runs
      message('4-0', bid(1), 'b'), // another key, no record: runs
      message('5-0', 'not-branded', 'a'), // no branded id: not compared, runs
    ]);
    expect(got).toEqual({ run: [2, 3, 4], skipped: ['1-0', '2-0'] });
    expect(loop.counters.snapshot()).toMatchObject({ totalDuplicates: 0, totalStale: 2 });
    expect(loop.logger.has(/entry 1-0 skipped \(stale\)/)).toBe(true);
  });
});

describe('AckRecords + AckBuffer', () => {
  it('records go out with the XACK of handled entries only, in one call; acked again after a failed send', async () => {
    const loop = testLoop();
    const store = new RecordStore();
    const rules = skipRulesOf({ dedup: true, newerWins: accountOf }) as SkipRules;
    const records = new AckRecords(rules);
    const buffer = new AckBuffer(loop.context, store, { forget: () => undefined }, { records });
    const handled = [
      message('1-0', bid(1), 'a'),
      message('2-0', bid(2), 'a'),
      message('3-0', bid(3), 'b'),
    ];
    records.handled(handled, ['1-0', '3-0']); // 2-0 failed: no record
    buffer.add(['1-0', '3-0']);
    await buffer.flush();
    expect(store.ackCalls).toEqual([
      {
        ids: ['1-0', '3-0'],
        records: [
          { kind: 'acked', id: bid(1), ttlMs: 600_000 },
          { kind: 'newest', key: 'a', id: bid(1), ttlMs: 86_400_000 },
          { kind: 'acked', id: bid(3), ttlMs: 600_000 },
          { kind: 'newest', key: 'b', id: bid(3), ttlMs: 86_400_000 },
        ],
      },
    ]);
    expect(records.recordsOf(['1-0', '3-0'])).toEqual([]); // written: forgotten
    expect(store.acked).toEqual(new Set([bid(1), bid(3)]));

    // a send that fails keeps the records for the next one
    records.handled([message('4-0', bid(4), 'a')], ['4-0']);
    buffer.add(['4-0']);
    const failing = store.ackRecording;
    store.ackRecording = () => Promise.reject(new Error('ERR down'));
    await expect(buffer.flush()).rejects.toThrow('ERR down');
    store.ackRecording = failing;
    await buffer.flush();
    expect(store.ackCalls.at(-1)?.records).toHaveLength(2);
    expect(store.newest.get('a')).toBe(bid(4));
  });

  it('without records (skipped entries, options off) it is the plain XACK', async () => {
    const loop = testLoop();
    const store = new RecordStore();
    const buffer = new AckBuffer(loop.context, store, { forget: () => undefined });
    buffer.add(['9-0']);
    await buffer.flush();
    expect(store.ackCalls).toEqual([{ ids: ['9-0'], records: [] }]);
  });
});
