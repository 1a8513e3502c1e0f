/**
 * PartitionOwnership (docs/partitions.md "Leases") against an in-memory lease table with the same
 * compare-and-set rules as the scripts: processes that start together converge on the floor/ceil
 * assignment without taking partitions back and forth; a join hands partitions over after their
 * loops stopped; a stop frees everything; a lease taken by another stops its loop at once; a
 * restart under the same name takes its old leases with a new generation.
 */
import {
  PartitionOwnership,
  type PartitionLoop,
} from '../../lib/consumer/partitions/partition-ownership';
import type { LeaseView, PartitionLeases } from '../../lib/redis/stream-roles';
import { LineLogger } from '../support/loop-context';

const COUNT = 6;
const LEASE_MS = 1000;

/** The lease table and members of one group, on a clock the test moves. */
class MemoryLeases implements PartitionLeases {
  now = 0;
  readonly owner: string[] = Array<string>(COUNT).fill('');
  readonly ends: number[] = Array<number>(COUNT).fill(0);
  readonly gen: number[] = Array<number>(COUNT).fill(0);
  readonly members = new Map<string, number>();
  /** Every take of a partition: [partition, member]. */
  readonly takes: Array<[number, string]> = [];

  ensureCount(): Promise<number> {
    return Promise.resolve(COUNT);
  }
  storedCount(): Promise<number | null> {
    return Promise.resolve(COUNT);
  }
  heartbeat(
    _s: string,
    _g: string,
    member: string,
    count: number,
    leaseMs: number,
    held: readonly number[],
  ): Promise<LeaseView> {
    this.members.set(member, this.now + leaseMs);
    for (const [m, end] of this.members) if (end <= this.now) this.members.delete(m);
    for (const p of held) if (this.owner[p] === member) this.ends[p] = this.now + leaseMs;
    return Promise.resolve({
      members: [...this.members.keys()].sort(),
      owners: Array.from({ length: count }, (_, p) => ({
        owner: this.owner[p] !== '' && this.ends[p] > this.now ? this.owner[p] : null,
        generation: this.gen[p],
      })),
    });
  }
  acquire(
    _s: string,
    _g: string,
    member: string,
    leaseMs: number,
    partitions: readonly number[],
  ): Promise<number[]> {
    return Promise.resolve(
      partitions.map((p) => {
        if (this.owner[p] !== '' && this.owner[p] !== member && this.ends[p] > this.now) return 0;
        this.owner[p] = member;
        this.ends[p] = this.now + leaseMs;
        this.takes.push([p, member]);
        return ++this.gen[p];
      }),
    );
  }
  release(
    _s: string,
    _g: string,
    member: string,
    partitions: readonly number[],
    leave: boolean,
  ): Promise<number> {
    let freed = 0;
    for (const p of partitions)
      if (this.owner[p] === member) {
        this.owner[p] = '';
        this.ends[p] = 0;
        freed++;
      }
    if (leave) this.members.delete(member);
    return Promise.resolve(freed);
  }
  table(): never {
    throw new Error('not used');
  }
}

/** An ownership whose loops are recorded: which partitions run here, and which stopped. */
function member(leases: MemoryLeases, name: string) {
  const running = new Set<number>();
  const stops: Array<{ partition: number; timeoutMs: number }> = [];
  const logger = new LineLogger();
  const ownership = new PartitionOwnership({
    stream: 'orders',
    group: 'g',
    member: name,
    where: `T.h on orders/g (${name})`,
    count: COUNT,
    leaseMs: LEASE_MS,
    stopTimeoutMs: 500,
    leases,
    logger,
    now: () => leases.now,
    open: (partition): Promise<PartitionLoop> => {
      running.add(partition);
      return Promise.resolve({
        stop: (timeoutMs) => {
          running.delete(partition);
          stops.push({ partition, timeoutMs });
          return Promise.resolve();
        },
      });
    },
  });
  const owned = () => ownership.owned().map((o) => o.partition);
  return { ownership, running, stops, logger, owned };
}

/** Ticks every member `rounds` times, in turn. */
async function tickAll(members: ReadonlyArray<{ ownership: PartitionOwnership }>, rounds = 3) {
  for (let r = 0; r < rounds; r++) for (const m of members) await m.ownership.tick();
  await new Promise((resolve) => setImmediate(resolve)); // hand-overs settle
  for (const m of members) await m.ownership.tick();
}

describe('PartitionOwnership', () => {
  it('converges on contiguous floor/ceil ranges without ping-pong when members start together', async () => {
    const leases = new MemoryLeases();
    const [a, b, c] = ['a', 'b', 'c'].map((name) => member(leases, name));
    // all three register before anyone takes anything (they started together)
    for (const name of ['a', 'b', 'c'])
      await leases.heartbeat('orders', 'g', name, COUNT, LEASE_MS, []);
    await tickAll([a, b, c], 4);
    expect([a.owned(), b.owned(), c.owned()]).toEqual([
      [0, 1],
      [2, 3],
      [4, 5],
    ]);
    // each partition taken exactly once: no partition moved back and forth
    expect(leases.takes).toHaveLength(COUNT);
    expect([...a.running, ...b.running, ...c.running].sort()).toEqual([0, 1, 2, 3, 4, 5]);
    expect(a.logger.lines).toContain(
      'log T.h on orders/g (a): partitions owned [] -> [0,1] (3 member(s))',
    );
  });

  it('hands partitions to a member that joins only after their loops stopped, then frees them', async () => {
    const leases = new MemoryLeases();
    const a = member(leases, 'a');
    await tickAll([a]);
    expect(a.owned()).toEqual([0, 1, 2, 3, 4, 5]);
    const b = member(leases, 'b');
    await tickAll([a, b], 3);
    expect(a.owned()).toEqual([0, 1, 2]);
    expect(b.owned()).toEqual([3, 4, 5]);
    expect(a.stops.map((s) => s.partition).sort()).toEqual([3, 4, 5]);
    expect(a.stops.every((s) => s.timeoutMs === 500)).toBe(true); // the entries in hand finish
    expect(leases.gen.slice(3)).toEqual([2, 2, 2]); // a take-over grows the generation
  });

  it('frees every lease and leaves at stop: the others take them on their next tick', async () => {
    const leases = new MemoryLeases();
    const [a, b] = ['a', 'b'].map((name) => member(leases, name));
    await tickAll([a, b], 3);
    await b.ownership.stop();
    expect(b.running.size).toBe(0);
    expect(leases.members.has('b')).toBe(false);
    await a.ownership.tick();
    expect(a.owned()).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('stops the loop of a lease another member took, at once', async () => {
    const leases = new MemoryLeases();
    const a = member(leases, 'a');
    await tickAll([a]);
    leases.owner[2] = 'z';
    leases.ends[2] = leases.now + LEASE_MS;
    leases.gen[2]++;
    await a.ownership.tick();
    expect(a.owned()).not.toContain(2);
    expect(a.stops).toContainEqual({ partition: 2, timeoutMs: 0 });
    expect(
      a.logger.lines.some((l) => /lost partition 2 \(generation 1, taken over by z\)/.test(l)),
    ).toBe(true);
  });

  it('a restart under the same name takes its old leases with a new generation', async () => {
    const leases = new MemoryLeases();
    const first = member(leases, 'a');
    await tickAll([first]);
    const again = member(leases, 'a'); // the first run died without freeing anything
    await again.ownership.tick();
    expect(again.owned()).toEqual([0, 1, 2, 3, 4, 5]);
    expect(leases.gen).toEqual([2, 2, 2, 2, 2, 2]);
  });
});
