/**
 * A partitioned handler's loops on shared links (lib/consumer/loop/partitioned-consumer.ts,
 * docs/partitions.md "Connections"), against the in-memory client and lease table: the loops of
 * every owned partition wait in one read and open no connection; a partition handed over leaves
 * that read and its lease is freed after its loop stopped; taken back, its new loop joins anew.
 * Real Redis: test/e2e/partitions-reads.e2e.spec.ts.
 */
import { resolveHandlerOptions } from '../../lib/config/module-options';
import { OwnPartitionLinks } from '../../lib/consumer/partitions/partition-links';
import { PartitionedConsumer } from '../../lib/consumer/loop/partitioned-consumer';
import type { StreamMessage } from '../../lib/interfaces/stream-message.interface';
import type { LeaseView, PartitionLeases } from '../../lib/redis/stream-roles';
import { MemoryLogger } from '../support/engine';
import { FakeStreamsClient } from '../support/fake-streams-client';
import { waitFor } from '../support/wait-for';

const S = 's';
const G = 'g';
const COUNT = 4;
const streams = Array.from({ length: COUNT }, (_, i) => `${S}:p:${i}`);

/** A lease table on the real clock: live members as the test says, compare-and-set takes. */
class TestLeases implements PartitionLeases {
  readonly others = new Set<string>();
  readonly owner = Array<string>(COUNT).fill('');
  readonly gen = Array<number>(COUNT).fill(0);
  readonly released: number[][] = [];
  ensureCount = () => Promise.resolve(COUNT);
  storedCount = () => Promise.resolve(COUNT);
  table = () => Promise.resolve([]);
  heartbeat(_s: string, _g: string, member: string): Promise<LeaseView> {
    return Promise.resolve({
      members: [member, ...this.others].sort(),
      owners: this.owner.map((o, p) => ({ owner: o === '' ? null : o, generation: this.gen[p] })),
    });
  }
  acquire(_s: string, _g: string, member: string, _ms: number, partitions: readonly number[]) {
    return Promise.resolve(
      partitions.map((p) => {
        if (this.owner[p] !== '' && this.owner[p] !== member) return 0;
        this.owner[p] = member;
        return ++this.gen[p];
      }),
    );
  }
  release(_s: string, _g: string, member: string, partitions: readonly number[]) {
    this.released.push([...partitions]);
    for (const p of partitions) if (this.owner[p] === member) this.owner[p] = '';
    return Promise.resolve(partitions.length);
  }
}

function setUp() {
  const fake = new FakeStreamsClient();
  for (const stream of streams) fake.seedGroup(stream, G);
  const opened: string[] = [];
  const leases = new TestLeases();
  const handled: string[] = [];
  const links = new OwnPartitionLinks({
    stream: S,
    group: G,
    consumer: 'a',
    // one model for both: the read sees what the commands write
    openCommandsClient: () => (opened.push('commands'), fake),
    openReadClient: () => (opened.push('read'), fake),
    partitionOf: () => '',
    warn: () => undefined,
  });
  const consumer = new PartitionedConsumer({
    stream: S,
    group: G,
    consumer: 'a',
    handlerName: 'Unit.handle',
    options: resolveHandlerOptions(
      S,
      'unit',
      { partitions: COUNT },
      { blockMs: 2000, claimIntervalMs: 60_000, minIdleMs: 120_000 },
    ),
    handler: {
      batch: false,
      call: (m: StreamMessage<unknown>) => void handled.push(`${m.partition}:${m.entryId}`),
    },
    deadLetters: { handlerCount: 0, deliver: async () => undefined },
    logger: new MemoryLogger(),
    count: COUNT,
    leaseMs: 200,
    stopTimeoutMs: 1000,
    leases,
    queries: fake,
    links,
  });
  return { fake, opened, leases, handled, consumer };
}

/** The streams the latest shared round named. */
function lastRound(fake: FakeStreamsClient): string[] {
  return (fake.callsOf('readGroups').slice(-1)[0]?.args[3] as string[] | undefined) ?? [];
}

describe('PartitionedConsumer on shared links', () => {
  it('waits for every owned partition in one read and opens no connection per partition', async () => {
    const { fake, opened, handled, consumer } = setUp();
    consumer.start();
    await waitFor(() => lastRound(fake).length === COUNT, {
      timeoutMs: 3000,
      message: 'one round naming the 4 partitions',
    });
    expect([...lastRound(fake)].sort()).toEqual(streams);
    expect(opened).toEqual(['commands', 'read']);
    const id = fake.seed(`${S}:p:2`, ['id', 'e-1', 'data', '{}', 'pkey', 'k']);
    await waitFor(() => handled.length === 1, { timeoutMs: 3000 });
    expect(handled).toEqual([`2:${id}`]);
    await consumer.stop(1000);
    expect(opened).toEqual(['commands', 'read']);
    expect(fake.closed).toBe(true); // the handler's own links close with it
  });

  it('a partition handed over leaves the read after its loop stopped; taken back, its loop joins anew', async () => {
    const { fake, leases, handled, consumer } = setUp();
    consumer.start();
    await waitFor(() => lastRound(fake).length === COUNT, { timeoutMs: 3000 });
    // b joins: partitions 2 and 3 are b's now
    leases.others.add('b');
    await waitFor(() => [2, 3].every((p) => leases.released.flat().includes(p)), {
      timeoutMs: 3000,
      message: '2 and 3 freed',
    });
    const roundsBefore = fake.callsOf('readGroups').length;
    await waitFor(() => fake.callsOf('readGroups').length > roundsBefore, { timeoutMs: 3000 });
    await waitFor(() => lastRound(fake).length === 2, { timeoutMs: 3000 });
    expect([...lastRound(fake)].sort()).toEqual([`${S}:p:0`, `${S}:p:1`]);
    expect(consumer.owned().map((o) => o.partition)).toEqual([0, 1]);
    // nothing of 2 or 3 is left pending here
    for (const stream of streams.slice(2)) expect(fake.pel(stream, G).size).toBe(0);
    // b leaves without taking them: they come back, each loop joins the read again
    leases.others.clear();
    await waitFor(() => lastRound(fake).length === COUNT, { timeoutMs: 3000 });
    fake.seed(`${S}:p:3`, ['id', 'e-2', 'data', '{}', 'pkey', 'k']);
    await waitFor(() => handled.length === 1, { timeoutMs: 3000 });
    expect(handled[0]).toMatch(/^3:/);
    await consumer.stop(1000);
  });
});
