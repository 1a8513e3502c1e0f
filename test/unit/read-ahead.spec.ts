/** Read-ahead (lib/consumer/read/read-ahead.ts): the next read goes out while a batch is handled. */
import { Heartbeat } from '../../lib/consumer/health/heartbeat';
import { ReadAhead } from '../../lib/consumer/read/read-ahead';
import { FakeStreamsClient } from '../support/fake-streams-client';
import { C, G, S, manualClock, testLoop, tick } from '../support/loop-context';

function setUp(partition?: { index: number; generation: number }, depth?: number) {
  const clock = manualClock();
  const loop = testLoop({ batchSize: 2, minIdleMs: 1000 }, clock.now);
  const context = partition ? { ...loop.context, partition } : loop.context;
  const fake = new FakeStreamsClient();
  fake.seedGroup(S, G);
  const heartbeat = new Heartbeat(loop.context, fake);
  const released: Array<{ ids: readonly string[]; what: string; counts: unknown }> = [];
  let drains = 0;
  const ahead = new ReadAhead(context, {
    client: fake,
    heartbeat,
    health: { drainNeeded: () => void drains++ },
    settlement: {
      release: async (ids, counts, what) => void released.push({ ids: [...ids], what, counts }),
    },
    depth,
  });
  return { clock, fake, heartbeat, ahead, released, drains: () => drains };
}

describe('ReadAhead', () => {
  it('sends one XREADGROUP > of a batch without BLOCK, claiming along what is idle past minIdleMs; take hands its entries over once', async () => {
    const { fake, ahead } = setUp();
    const ids = fake.seedJson(S, 3);
    expect(ahead.inFlight).toBe(false);
    ahead.fill();
    expect(ahead.inFlight).toBe(true);
    expect(fake.callsOf('readGroup').map((c) => c.args)).toEqual([
      [S, G, C, 2, '>', undefined, undefined, 1000],
    ]);
    expect((await ahead.take()).map((e) => e.entryId)).toEqual(ids.slice(0, 2));
    expect(ahead.inFlight).toBe(false);
    expect(await ahead.take()).toEqual([]);
  });

  it('entries read ahead are kept claimed by the heartbeat until taken', async () => {
    const { clock, fake, heartbeat, ahead } = setUp();
    const ids = fake.seedJson(S, 2);
    ahead.fill();
    await tick();
    clock.advance(600);
    await heartbeat.tick();
    expect(fake.callsOf('touch').map((c) => c.args[3])).toEqual([ids]);
    await ahead.take();
    clock.advance(600);
    await heartbeat.tick();
    expect(fake.callsOf('touch')).toHaveLength(1);
  });

  it('a read that failed asks for a drain of the own PEL (its reply may have delivered entries)', async () => {
    const { fake, ahead, drains } = setUp();
    fake.fail('readGroup');
    ahead.fill();
    await tick();
    expect(drains()).toBe(1);
    expect(await ahead.takeQuietly()).toEqual([]);
  });

  it('at stop, what was read ahead is released to peers (a fresh read: uncharged)', async () => {
    const { fake, ahead, released } = setUp();
    const ids = fake.seedJson(S, 2);
    await ahead.release(); // nothing in flight: nothing to do
    expect(released).toEqual([]);
    ahead.fill();
    await ahead.release();
    expect(released).toEqual([{ ids, what: 'read-ahead', counts: null }]);
  });

  it('at stop, entries a read ahead claimed along go back with the count they had', async () => {
    const loop = testLoop({ batchSize: 2, minIdleMs: 1000 }, manualClock().now);
    const released: unknown[] = [];
    const claimed = [
      { entryId: '1-0', fields: ['id', 'a', 'data', '1'], deliveries: 3 }, // a dead peer's
      { entryId: '2-0', fields: ['id', 'b', 'data', '2'], deliveries: 1 }, // new
    ];
    const ahead = new ReadAhead(loop.context, {
      client: { readGroup: async () => claimed },
      heartbeat: { hold: () => undefined as never, drop: () => undefined },
      health: { drainNeeded: () => undefined },
      settlement: { release: async (ids, counts) => void released.push([ids, counts]) },
    });
    ahead.fill();
    await ahead.release();
    expect(released).toEqual([
      [
        ['1-0', '2-0'],
        new Map([
          ['1-0', 3],
          ['2-0', 1],
        ]),
      ],
    ]);
  });

  it("a partition's read ahead claims nothing along: its dead owner's entries come through the sweep", async () => {
    const { fake, ahead } = setUp({ index: 3, generation: 1 });
    fake.seedJson(S, 1);
    ahead.fill();
    expect(fake.callsOf('readGroup')[0].args[7]).toBeUndefined();
    await ahead.take();
  });
  it('depth 2 (a skip look-up): fill keeps two reads in flight, taken in the order sent; the heartbeat holds what both delivered until each is taken', async () => {
    const { clock, fake, heartbeat, ahead } = setUp(undefined, 2);
    const ids = fake.seedJson(S, 5);
    ahead.fill();
    expect(fake.callsOf('readGroup')).toHaveLength(2);
    ahead.fill(); // two in flight already: nothing more goes out
    expect(fake.callsOf('readGroup')).toHaveLength(2);
    await tick();
    clock.advance(600);
    await heartbeat.tick();
    expect(fake.callsOf('touch').map((c) => c.args[3])).toEqual([ids.slice(0, 4)]);
    expect((await ahead.take()).map((e) => e.entryId)).toEqual(ids.slice(0, 2));
    expect(ahead.inFlight).toBe(true);
    ahead.fill(); // tops up to two again
    expect(fake.callsOf('readGroup')).toHaveLength(3);
    await tick();
    clock.advance(600);
    await heartbeat.tick();
    expect(fake.callsOf('touch').map((c) => c.args[3])[1]).toEqual(ids.slice(2, 5));
    expect((await ahead.take()).map((e) => e.entryId)).toEqual(ids.slice(2, 4));
    expect((await ahead.take()).map((e) => e.entryId)).toEqual(ids.slice(4, 5));
    expect(ahead.inFlight).toBe(false);
    clock.advance(600);
    await heartbeat.tick();
    expect(fake.callsOf('touch')).toHaveLength(2);
  });

  it('depth 2: a stop releases the entries of every read in flight, and takeQuietly hands over all of them', async () => {
    const { fake, ahead, released } = setUp(undefined, 2);
    const ids = fake.seedJson(S, 4);
    ahead.fill();
    await ahead.release();
    expect(released).toEqual([
      { ids: ids.slice(0, 2), what: 'read-ahead', counts: null },
      { ids: ids.slice(2, 4), what: 'read-ahead', counts: null },
    ]);
    expect(ahead.inFlight).toBe(false);
    const more = fake.seedJson(S, 3);
    ahead.fill();
    expect((await ahead.takeQuietly()).map((e) => e.entryId)).toEqual(more);
    expect(ahead.inFlight).toBe(false);
  });
});
