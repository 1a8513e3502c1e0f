/** Sorting a read (lib/consumer/read/entry-triage.ts): a pure function, no clock, no Redis. */
import { jsonCodec } from '../../lib/codec/codecs';
import { triage, type TriageRules } from '../../lib/consumer/read/entry-triage';
import type { RawEntry } from '../../lib/redis/streams-client';
import type { StreamTransaction } from '../../lib/interfaces/stream-transaction.interface';

const signal = new AbortController().signal;
// each message gets the transaction the loop makes for it (one object per message here)
const transactionOf = (id: string, entryId: string, deliveries: number): StreamTransaction =>
  ({ made: `${id}/${entryId}/${deliveries}` }) as unknown as StreamTransaction;
const saved: Array<[string, unknown]> = [];

function rules(waiting: string[] = []): TriageRules {
  return {
    stream: 's',
    group: 'g',
    consumer: 'c',
    codec: jsonCodec,
    maxDeliveries: 3,
    signal,
    isWaitingRetry: (id) => waiting.includes(id),
    saveCheckpoint: async (entryId, value) => {
      saved.push([entryId, value]);
    },
    transactionOf: (id, entryId, deliveries) => transactionOf(id, entryId, deliveries),
  };
}

const entry = (entryId: string, data = '{"n":1}'): RawEntry => ({
  entryId,
  fields: ['id', `b-${entryId}`, 'data', data],
});

describe('triage', () => {
  it('sorts a read into waiting retries, deleted, poison, undecodable and fresh, in read order', () => {
    const entries: RawEntry[] = [
      entry('1-0'),
      { entryId: '2-0', fields: null },
      entry('3-0'),
      entry('4-0', '{not json'),
      entry('5-0', '{"n":5}'),
      entry('6-0'),
    ];
    const counts = new Map([
      ['1-0', 2],
      ['3-0', 4],
      ['4-0', 1],
      ['5-0', 3],
      ['6-0', 1],
    ]);
    const read = triage(entries, counts, rules(['6-0']));
    expect(read.waitingRetries).toEqual(['6-0']);
    expect(read.deleted).toEqual(['2-0']);
    // delivered 4 times with maxDeliveries 3: the letter counts the deliveries before this read
    expect(read.poison).toEqual([
      { entryId: '3-0', fields: entries[2].fields, attempts: 3, error: undefined },
    ]);
    expect(read.undecodable).toHaveLength(1);
    expect(read.undecodable[0]).toMatchObject({ entryId: '4-0', attempts: 1 });
    expect(read.undecodable[0].error).toEqual(expect.any(String));
    expect(read.fresh.map((m) => [m.entryId, m.id, m.attempts, m.payload])).toEqual([
      ['1-0', 'b-1-0', 2, { n: 1 }],
      ['5-0', 'b-5-0', 3, { n: 5 }],
    ]);
    expect(read.freshFields).toEqual([entries[0].fields, entries[4].fields]);
  });

  it('a fresh read (no counts) is a first attempt, and messages carry who read them, the signal and their saveCheckpoint', async () => {
    const read = triage([entry('7-0'), entry('8-0')], null, rules());
    expect(read.fresh).toEqual([
      {
        id: 'b-7-0',
        entryId: '7-0',
        stream: 's',
        group: 'g',
        consumer: 'c',
        payload: { n: 1 },
        attempts: 1,
        signal,
        saveCheckpoint: expect.any(Function),
        tx: expect.objectContaining({ made: 'b-7-0/7-0/1' }),
      },
      expect.objectContaining({
        entryId: '8-0',
        tx: expect.objectContaining({ made: 'b-8-0/8-0/1' }),
      }),
    ]);
    expect('checkpoint' in read.fresh[0]).toBe(false);
    // each message's saveCheckpoint saves for its own entry
    saved.length = 0;
    await read.fresh[1].saveCheckpoint({ step: 1 });
    await read.fresh[0].saveCheckpoint(2);
    expect(saved).toEqual([
      ['8-0', { step: 1 }],
      ['7-0', 2],
    ]);
  });

  it('a waiting retry wins over everything else, even when deleted or past maxDeliveries', () => {
    const read = triage(
      [{ entryId: '1-0', fields: null }, entry('2-0')],
      new Map([['2-0', 9]]),
      rules(['1-0', '2-0']),
    );
    expect(read.waitingRetries).toEqual(['1-0', '2-0']);
    expect(read.deleted).toEqual([]);
    expect(read.poison).toEqual([]);
  });

  it('an entry missing from the counts is a first attempt; one at exactly maxDeliveries is handled', () => {
    const read = triage([entry('1-0'), entry('2-0')], new Map([['2-0', 3]]), rules());
    expect(read.fresh.map((m) => m.attempts)).toEqual([1, 3]);
    expect(read.poison).toEqual([]);
  });

  it('a read that claimed entries along (CLAIM) counts them itself: a claimed poison pill is dead-lettered, never handled', () => {
    const read = triage(
      [
        { ...entry('1-0'), deliveries: 4 }, // delivered 3 times before this read
        { ...entry('2-0'), deliveries: 2 },
        { ...entry('3-0'), deliveries: 1 }, // new
        entry('4-0'), // no count in the read: a first attempt
      ],
      null,
      rules(),
    );
    expect(read.poison.map(({ entryId, attempts }) => [entryId, attempts])).toEqual([['1-0', 3]]);
    expect(read.fresh.map((m) => [m.entryId, m.attempts])).toEqual([
      ['2-0', 2],
      ['3-0', 1],
      ['4-0', 1],
    ]);
    // the transaction of a claimed entry is fenced by the count the read gave it
    expect(read.fresh[0].tx).toEqual({ made: 'b-2-0/2-0/2' });
  });
});
