/**
 * The skip filter before the handler (lib/consumer/skip/skip-filter.ts), the records written with the
 * XACK and kept until Redis surely holds them (lib/consumer/settle/ack-records.ts,
 * lib/consumer/settle/ack-buffer.ts) and the rules read from the handler options
 * (lib/consumer/skip/skip-rules.ts), against a small in-memory record store.
 */
import { AckWriter } from '../../lib/consumer/settle/ack-writer';
import { AckBuffer } from '../../lib/consumer/settle/ack-buffer';
import { AckRecords } from '../../lib/consumer/settle/ack-records';
import { NO_SKIPS, SkipFilter, type SkipVerdicts } from '../../lib/consumer/skip/skip-filter';
import { skipRulesOf, type SkipRules } from '../../lib/consumer/skip/skip-rules';
import type { StreamMessage } from '../../lib/interfaces/stream-message.interface';
import type { AlongAck, SkipQuery, SkipRecord } from '../../lib/redis/stream-roles';
import { G, S, testLoop } from '../support/loop-context';
import { NO_TRANSACTION } from '../../lib/consumer/commit';

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
    tx: NO_TRANSACTION,
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
    return this.found(queries);
  };

  found(queries: readonly SkipQuery[]): Array<string | null> {
    return queries.map((q) =>
      q.kind === 'acked' ? (this.acked.has(q.id) ? q.id : null) : (this.newest.get(q.key) ?? null),
    );
  }

  ack = async (_s: string, _g: string, ids: readonly string[]): Promise<number> => {
    this.ackCalls.push({ ids, records: [] });
    return ids.length;
  };

  ackRecording = async (
    _s: string,
    _g: string,
    ids: readonly string[],
    records: readonly SkipRecord[],
    _along?: readonly AlongAck[],
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

/** A filter of `rules` over `store`, with the loop's own records. */
function filterOf(rules: SkipRules, store: RecordStore) {
  const loop = testLoop();
  const records = new AckRecords(rules);
  const filter = new SkipFilter(loop.context, store, rules, records);
  const check = (messages: StreamMessage<unknown>[]): Promise<SkipVerdicts> =>
    filter.lookUp(messages).verdicts();
  return { loop, records, filter, check };
}

const DEDUP: SkipRules = { dedupWindowMs: 1000, keyOf: undefined };

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
    const got = await NO_SKIPS.lookUp([message('1-0', 'a'), message('2-0', 'b')]).verdicts();
    expect(got).toEqual({ run: [0, 1], skipped: [] });
  });

  it('dedup: an id the group acked is skipped (counted, logged at debug), the rest run, in one read of the records', async () => {
    const store = new RecordStore();
    store.acked.add('dup');
    const { loop, check } = filterOf(DEDUP, store);
    const got = await check([message('1-0', 'new'), message('2-0', 'dup'), message('3-0', 'x')]);
    expect(got).toEqual({ run: [0, 2], skipped: ['2-0'] });
    expect(store.reads).toBe(1);
    expect(loop.counters.snapshot()).toMatchObject({ totalDuplicates: 1, totalStale: 0 });
    expect(loop.logger.has(/^debug T\.h on orders\/g: entry 2-0 skipped \(duplicate\)/)).toBe(true);
  });

  it('newerWins: an entry not newer than the newest acked of its key is stale; newer ones and other keys run', async () => {
    const store = new RecordStore();
    store.newest.set('a', bid(5));
    const rules = skipRulesOf({ dedup: false, newerWins: accountOf }) as SkipRules;
    const { loop, check } = filterOf(rules, store);
    const got = await check([
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
    const buffer = new AckBuffer(
      loop.context,
      new AckWriter(loop.context, store),
      { forget: () => undefined },
      { records },
    );
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
          { kind: 'acked', id: bid(3), ttlMs: 600_000 },
          { kind: 'newest', key: 'a', id: bid(1), ttlMs: 86_400_000 },
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

  it('newerWins: one record per key in a send, its highest id (the others would change nothing)', () => {
    const rules = skipRulesOf({ dedup: false, newerWins: accountOf }) as SkipRules;
    const records = new AckRecords(rules);
    const handled = [
      message('1-0', bid(3), 'a'),
      message('2-0', bid(9), 'a'),
      message('3-0', bid(5), 'a'),
      message('4-0', bid(1), 'b'),
    ];
    records.handled(handled, ['1-0', '2-0', '3-0', '4-0']);
    expect(records.recordsOf(['1-0', '2-0', '3-0', '4-0'])).toEqual([
      { kind: 'newest', key: 'a', id: bid(9), ttlMs: 86_400_000 },
      { kind: 'newest', key: 'b', id: bid(1), ttlMs: 86_400_000 },
    ]);
    expect(records.recordsOf(['1-0'])).toEqual([
      { kind: 'newest', key: 'a', id: bid(3), ttlMs: 86_400_000 },
    ]);
  });

  it('a look-up goes out at once (one MGET), before the XACK of a twin handled here: the own records answer for it', async () => {
    const loop = testLoop();
    const store = new RecordStore();
    const records = new AckRecords(DEDUP);
    const filter = new SkipFilter(loop.context, store, DEDUP, records);
    const buffer = new AckBuffer(
      loop.context,
      new AckWriter(loop.context, store),
      { forget: () => undefined },
      { records },
    );
    records.handled([message('1-0', 'order-1')], ['1-0']);
    buffer.add(['1-0']);
    const copy = filter.lookUp([message('2-0', 'order-1')]);
    expect(store.reads).toBe(1); // sent now, not with the XACK
    await buffer.flush();
    expect(await copy.verdicts()).toEqual({ run: [], skipped: ['2-0'] });
    expect(store.ackCalls).toHaveLength(1);
    expect(store.reads).toBe(1);
  });

  it('without records (skipped entries, options off) it is the plain XACK', async () => {
    const loop = testLoop();
    const store = new RecordStore();
    const buffer = new AckBuffer(loop.context, new AckWriter(loop.context, store), {
      forget: () => undefined,
    });
    buffer.add(['9-0']);
    await buffer.flush();
    expect(store.ackCalls).toEqual([{ ids: ['9-0'], records: [] }]);
  });
});

describe("the loop's own records: a look-up sent before an XACK's reply", () => {
  it('dedup: a twin handled here whose XACK is not in yet skips the copy, though the look-up found nothing', async () => {
    const store = new RecordStore();
    const { loop, records, check } = filterOf(DEDUP, store);
    records.handled([message('1-0', 'order-1')], ['1-0']); // the twin returned, its XACK not sent
    const got = await check([message('9-0', 'order-1'), message('10-0', 'order-2')]);
    expect(got).toEqual({ run: [1], skipped: ['9-0'] });
    expect(store.acked.size).toBe(0); // Redis knew nothing: the verdict is the loop's own
    expect(loop.counters.snapshot().totalDuplicates).toBe(1);
    expect(loop.logger.has(/entry 9-0 skipped \(duplicate\): .*by this consumer/)).toBe(true);
  });

  it('a twin whose handler failed leaves no record: the copy runs', async () => {
    const { records, check } = filterOf(DEDUP, new RecordStore());
    records.handled([message('1-0', 'order-1')], []); // it failed
    expect(await check([message('9-0', 'order-1')])).toEqual({ run: [0], skipped: [] });
  });

  it('newerWins: a newer entry of the key handled here makes an older one stale; a newer one still runs', async () => {
    const rules = skipRulesOf({ dedup: false, newerWins: accountOf }) as SkipRules;
    const store = new RecordStore();
    store.newest.set('a', bid(2));
    const { records, check } = filterOf(rules, store);
    records.handled([message('5-0', bid(7), 'a')], ['5-0']);
    const got = await check([
      message('6-0', bid(6), 'a'), // older than the one handled here: stale
      message('7-0', bid(8), 'a'), // newer: runs
      message('8-0', bid(1), 'b'), // another key: runs
    ]);
    expect(got).toEqual({ run: [1, 2], skipped: ['6-0'] });
  });

  /** What every kept record says (a look-up that may have missed them all). */
  const kept = (records: AckRecords) =>
    records.missedBy({ sent: Infinity, complete: false, handledBefore: -1 });

  it('kept after the XACK while a look-up sent before its reply is open; dropped once it is answered', async () => {
    const store = new RecordStore();
    const { records, filter } = filterOf(DEDUP, store);
    records.handled([message('1-0', 'order-1')], ['1-0']);
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const slow = store.readRecords;
    store.readRecords = async () => {
      await gate; // answered after the XACK's reply: Redis ran it before the XACK
      return [null];
    };
    const early = filter.lookUp([message('9-0', 'order-1')]);
    store.readRecords = slow;
    await store.ackRecording(S, G, ['1-0'], records.recordsOf(['1-0']));
    records.forget(['1-0']); // the XACK's reply came
    expect(kept(records)?.acked.has('order-1')).toBe(true); // the early look-up may have missed it
    const later = filter.lookUp([message('11-0', 'order-1')]); // sent after the reply
    release();
    expect(await early.verdicts()).toEqual({ run: [], skipped: ['9-0'] });
    expect(kept(records)?.acked.has('order-1')).toBe(false); // nothing open that could miss it
    expect(await later.verdicts()).toEqual({ run: [], skipped: ['11-0'] }); // Redis has it
  });

  it('a dropped look-up (its read never handled) and a failed one keep nothing', async () => {
    const store = new RecordStore();
    const { records, filter } = filterOf(DEDUP, store);
    records.handled([message('1-0', 'order-1')], ['1-0']);
    const dropped = filter.lookUp([message('9-0', 'x')]);
    store.readRecords = () => Promise.reject(new Error('ERR down'));
    const failed = filter.lookUp([message('10-0', 'y')]);
    records.forget(['1-0']);
    expect(kept(records)?.acked.has('order-1')).toBe(true);
    dropped.drop();
    expect(kept(records)?.acked.has('order-1')).toBe(true); // the failed one is still open
    await expect(failed.verdicts()).rejects.toThrow('ERR down');
    expect(kept(records)?.acked.has('order-1')).toBe(false);
  });

  it('a look-up sent while every record was confirmed, nothing handled since, missed none: no own record is read', () => {
    const { records } = filterOf(DEDUP, new RecordStore());
    records.handled([message('1-0', 'order-1'), message('2-0', 'order-2')], ['1-0', '2-0']);
    // sent before their XACK's reply: it may miss both
    const early = records.lookUpSent();
    expect(early.complete).toBe(false);
    expect(records.missedBy(early)?.acked).toEqual(new Set(['order-1', 'order-2']));
    records.forget(['1-0', '2-0']);
    const after = records.lookUpSent();
    expect(after.complete).toBe(true);
    expect(records.missedBy(after)).toBeNull();
    // handled after it went out: counted too
    records.handled([message('3-0', 'order-3')], ['3-0']);
    expect(records.missedBy(after)?.acked.has('order-3')).toBe(true);
    records.lookUpAnswered(after);
    records.lookUpAnswered(early);
  });
});
