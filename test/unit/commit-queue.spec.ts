/**
 * The commits of exactly-once entries on the ack path (lib/consumer/settle/commit-queue.ts and
 * AckBuffer.send): what a handler wrote is committed in place of its XACK, each verdict settles
 * its entry (committed: acked; fenced: settled here, counted; invalid: left pending for the own
 * PEL drain), and entries without a commit are acked as usual beside them.
 */
import { AckBuffer } from '../../lib/consumer/settle/ack-buffer';
import { CommitQueue } from '../../lib/consumer/settle/commit-queue';
import type { AttemptWrites } from '../../lib/consumer/commit';
import type { AckWriter } from '../../lib/consumer/settle/ack-writer';
import type { StreamMessage } from '../../lib/interfaces/stream-message.interface';
import type { CommitVerdict, CommitWrite, EntryCommit } from '../../lib/redis/stream-roles';
import { testLoop } from '../support/loop-context';

const WRITE: CommitWrite = { op: 'incrBy', key: 'n', by: 1 };

/**
 * A message whose transaction collected `writes` (none: a message of another handler), read with
 * delivery count `deliveries`; its `attempts` one more (a partition's in-place retry).
 */
function message(entryId: string, deliveries = 1, writes?: CommitWrite[]): StreamMessage<unknown> {
  const m = { entryId, attempts: deliveries + 1, writes, deliveries };
  return m as unknown as StreamMessage<unknown>;
}
const writesOf = (m: StreamMessage<unknown>): AttemptWrites | undefined => {
  const { writes, deliveries } = m as unknown as { writes?: CommitWrite[]; deliveries: number };
  return writes && { writes, deliveries };
};

describe('CommitQueue', () => {
  it("keeps a copy of what each returned entry's transaction wrote, with the delivery it was read with", () => {
    const queue = new CommitQueue(writesOf);
    const writes = [WRITE];
    queue.handled(
      [message('1-0', 2, writes), message('2-0', 1, [WRITE]), message('3-0')],
      ['1-0', '3-0'],
    );
    writes.length = 0; // the transaction starts over at a next attempt
    expect(queue.split(['1-0', '2-0', '3-0'])).toEqual({
      commits: [{ entryId: '1-0', deliveries: 2, writes: [WRITE] }],
      rest: ['2-0', '3-0'],
    });
    expect(queue.split(['3-0'])).toBeNull();
    queue.settled(['1-0']);
    expect(queue.split(['1-0'])).toBeNull();
  });
});

describe('AckBuffer with commits', () => {
  function setUp(verdicts: (commits: readonly EntryCommit[]) => CommitVerdict[]) {
    const loop = testLoop();
    const queue = new CommitQueue(writesOf);
    const sent: string[] = [];
    const drains: number[] = [];
    const told: string[] = [];
    const writer: Pick<AckWriter, 'handled' | 'committed'> = {
      handled: async (ids) => {
        sent.push(`xack ${ids.join(',')}`);
      },
      committed: async (commits) => {
        sent.push(`commit ${commits.map((c) => c.entryId).join(',')}`);
        return verdicts(commits);
      },
    };
    const acks = new AckBuffer(
      loop.context,
      writer,
      { forget: () => undefined },
      {
        commits: { queue, health: { drainNeeded: () => void drains.push(1) } },
        watch: {
          acked: (ids) => void told.push(`acked ${ids.join(',')}`),
          failed: (ids) => void told.push(`failed ${ids.join(',')}`),
        },
      },
    );
    return { loop, queue, acks, sent, drains, told };
  }

  it('commits handled entries in place of their XACK, and acks the others beside them', async () => {
    const { loop, queue, acks, sent, told } = setUp((commits) =>
      commits.map((c) => ({ entryId: c.entryId, outcome: 'committed' })),
    );
    queue.handled([message('1-0', 1, [WRITE]), message('2-0', 1, [])], ['1-0', '2-0']);
    acks.add(['1-0', '2-0', '9-0']);
    await acks.flush();
    expect(sent).toEqual(['commit 1-0,2-0', 'xack 9-0']);
    expect(loop.counters.snapshot().totalAcked).toBe(3);
    expect(told).toEqual(['acked 1-0,2-0', 'acked 9-0']);
    expect(queue.split(['1-0'])).toBeNull();
  });

  it('a fenced entry is settled here, counted and logged; an invalid one stays pending for the drain', async () => {
    const { loop, queue, acks, drains, told } = setUp(() => [
      { entryId: '1-0', outcome: 'committed' },
      { entryId: '2-0', outcome: 'fenced', why: 'owned by c2' },
      { entryId: '3-0', outcome: 'invalid', why: 'INCRBY on n, which holds a hash' },
    ]);
    queue.handled(
      ['1-0', '2-0', '3-0'].map((id) => message(id, 1, [WRITE])),
      ['1-0', '2-0', '3-0'],
    );
    acks.add(['1-0', '2-0', '3-0']);
    await acks.flush();
    const figures = loop.counters.snapshot();
    expect(figures.totalAcked).toBe(1);
    expect(figures.totalFenced).toBe(1);
    expect(loop.logger.has(/warn .*commit of entry 2-0 \(owned by c2\) was refused/)).toBe(true);
    expect(
      loop.logger.has(/error .*entry 3-0 \(INCRBY on n, which holds a hash\).*stays pending/),
    ).toBe(true);
    expect(drains).toHaveLength(1);
    expect(told).toEqual(['acked 1-0,2-0', 'failed 3-0']);
    // nothing of them kept: a next attempt of 3-0 queues its own writes
    expect(queue.split(['1-0', '2-0', '3-0'])).toBeNull();
  });

  it('a commit that gets no answer keeps its entries queued and waiting, and throws', async () => {
    const { acks, queue, told } = setUp(() => {
      throw new Error('connection lost');
    });
    queue.handled([message('1-0', 1, [WRITE])], ['1-0']);
    acks.add(['1-0']);
    await expect(acks.flush()).rejects.toThrow(/connection lost/);
    expect(told).toEqual(['failed 1-0']);
    expect(acks.take()).toEqual(['1-0']);
    expect(queue.split(['1-0'])?.commits.map((c) => c.entryId)).toEqual(['1-0']);
  });
});
