/**
 * One stream in every view (lib/stats/partitioned-inspection.ts, lib/stats/dead-letter-counter.ts):
 * a partitioned stream's group figures are its partitions' summed with a per-partition
 * breakdown, and its dead letters are counted per partition and group, older letters naming a
 * partition's stream included. Canned replies, no Redis.
 */
import { deadLetterFields } from '../../lib/codec/dead-letter-fields';
import type { DeadLetterScope } from '../../lib/codec/dead-letter-scope';
import type { RawEntry, StreamsClient } from '../../lib/redis/stream-roles';
import { DeadLetterCounter } from '../../lib/stats/dead-letter-counter';
import {
  inspectPartitionGroup,
  partitionGroups,
  readPartitions,
} from '../../lib/stats/partitioned-inspection';

const NOW = 1_800_000_000_000;

/** Three partitions of `s`: group g on 0 and 1 (not 2), group h on 2 only. */
const client = {
  length: async (stream: string) => ({ 's:p:0': 5, 's:p:1': 7, 's:p:2': 1 })[stream] ?? 0,
  groups: async (stream: string) =>
    ({
      's:p:0': [{ name: 'g', pending: 2, lag: 1, lastDeliveredId: '9-0' }],
      's:p:1': [{ name: 'g', pending: 1, lag: 3, lastDeliveredId: '9-0' }],
      's:p:2': [{ name: 'h', pending: 0, lag: 0, lastDeliveredId: '9-0' }],
    })[stream] ?? [],
  consumers: async (stream: string) =>
    stream === 's:p:0'
      ? [
          { name: 'a', pending: 2, idleMs: 40 },
          { name: 'old', pending: 0, idleMs: 9000 },
        ]
      : [{ name: 'a', pending: 1, idleMs: 10 }],
  pending: async (stream: string) => [
    {
      entryId: stream === 's:p:0' ? `${NOW - 3000}-0` : `${NOW - 500}-0`,
      consumer: 'a',
      idleMs: 1,
      deliveries: 1,
    },
  ],
} as unknown as StreamsClient;

const leases = {
  table: async (_stream: string, _group: string, count: number) =>
    Array.from({ length: count }, (_, partition) => ({
      partition,
      owner: partition < 2 ? 'a' : null,
      generation: partition + 1,
      leftMs: partition < 2 ? 800 : 0,
    })),
};

const letters = {
  total: 4,
  byGroup: new Map([['g', 4]]),
  byPartition: new Map([
    [0, 3],
    [1, 1],
  ]),
  exact: true,
};

describe('inspectPartitionGroup', () => {
  it("sums a group's partitions, with each partition's lease and figures", async () => {
    const read = await readPartitions(client, 's', 3);
    expect(partitionGroups(read)).toEqual(['g', 'h']);
    const inspection = await inspectPartitionGroup(client, leases, read, 'g', letters, NOW);
    expect(inspection).toEqual({
      pending: 3,
      // partition 2 has no group g: its lag is unknown, so is the sum
      lag: null,
      consumers: [
        { name: 'a', pending: 3, idleMs: 10 },
        { name: 'old', pending: 0, idleMs: 9000 },
      ],
      oldestPendingMs: 3000,
      deadLetters: 4,
      partitions: [
        {
          partition: 0,
          stream: 's:p:0',
          owner: 'a',
          generation: 1,
          leaseLeftMs: 800,
          length: 5,
          pending: 2,
          lag: 1,
          oldestPendingMs: 3000,
          deadLetters: 3,
        },
        {
          partition: 1,
          stream: 's:p:1',
          owner: 'a',
          generation: 2,
          leaseLeftMs: 800,
          length: 7,
          pending: 1,
          lag: 3,
          oldestPendingMs: 500,
          deadLetters: 1,
        },
        {
          partition: 2,
          stream: 's:p:2',
          owner: null,
          generation: 3,
          leaseLeftMs: 0,
          length: 1,
          pending: 0,
          lag: null,
          oldestPendingMs: null,
          deadLetters: 0,
        },
      ],
    });
  });
});

describe('DeadLetterCounter', () => {
  const letter = (id: string, stream: string, group: string, partition?: number): RawEntry => ({
    entryId: id,
    fields: [
      'id',
      id,
      ...deadLetterFields({
        reason: 'max_deliveries',
        stream,
        group,
        entryId: '1-0',
        attempts: 1,
        error: undefined,
        at: new Date(NOW),
        partition,
      }),
    ],
  });
  const sink: RawEntry[] = [
    letter('1-0', 's', 'g', 0),
    letter('2-0', 's:p:1', 'g'), // written before letters named the stream
    letter('3-0', 's', 'h', 2),
    letter('4-0', 'other', 'g', 0),
    letter('5-0', 's', 'g', 0),
  ];
  const counting = {
    length: async () => sink.length,
    range: async () => [],
    browser: () => ({
      revRange: async (_s: string, _end: string, _start: string, count: number) =>
        [...sink].reverse().slice(0, count),
    }),
  } as unknown as StreamsClient & { browser(): never };

  it("counts a partitioned stream's letters by group and by partition, and one partition's alone", async () => {
    const whole: DeadLetterScope = { asked: 's', stream: 's', partitions: 4 };
    const counts = await new DeadLetterCounter().count(counting, 's:dlq', whole);
    expect(counts).toEqual({
      total: 4,
      byGroup: new Map([
        ['g', 3],
        ['h', 1],
      ]),
      byPartition: new Map([
        [0, 2],
        [1, 1],
        [2, 1],
      ]),
      exact: true,
    });
    const zero: DeadLetterScope = { asked: 's:p:0', stream: 's', partitions: 4, partition: 0 };
    expect((await new DeadLetterCounter().count(counting, 's:dlq', zero)).total).toBe(2);
  });
});
