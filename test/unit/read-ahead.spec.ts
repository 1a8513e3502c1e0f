/** Read-ahead (lib/consumer/read/read-ahead.ts): the next read goes out while a batch is handled. */
import { Heartbeat } from '../../lib/consumer/health/heartbeat';
import { ReadAhead } from '../../lib/consumer/read/read-ahead';
import { FakeStreamsClient } from '../support/fake-streams-client';
import { C, G, S, manualClock, testLoop, tick } from '../support/loop-context';

function setUp() {
  const clock = manualClock();
  const loop = testLoop({ batchSize: 2, minIdleMs: 1000 }, clock.now);
  const fake = new FakeStreamsClient();
  fake.seedGroup(S, G);
  const heartbeat = new Heartbeat(loop.context, fake);
  const released: Array<{ ids: readonly string[]; what: string }> = [];
  let drains = 0;
  const ahead = new ReadAhead(loop.context, {
    client: fake,
    heartbeat,
    health: { drainNeeded: () => void drains++ },
    settlement: {
      release: async (ids, _counts, what) => void released.push({ ids: [...ids], what }),
    },
  });
  return { clock, fake, heartbeat, ahead, released, drains: () => drains };
}

describe('ReadAhead', () => {
  it('sends one XREADGROUP > of a batch without BLOCK; take hands its entries over once', async () => {
    const { fake, ahead } = setUp();
    const ids = fake.seedJson(S, 3);
    expect(ahead.inFlight).toBe(false);
    ahead.start();
    expect(ahead.inFlight).toBe(true);
    expect(fake.callsOf('readGroup').map((c) => c.args)).toEqual([[S, G, C, 2, '>', undefined]]);
    expect((await ahead.take()).map((e) => e.entryId)).toEqual(ids.slice(0, 2));
    expect(ahead.inFlight).toBe(false);
    expect(await ahead.take()).toEqual([]);
  });

  it('entries read ahead are kept claimed by the heartbeat until taken', async () => {
    const { clock, fake, heartbeat, ahead } = setUp();
    const ids = fake.seedJson(S, 2);
    ahead.start();
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
    ahead.start();
    await tick();
    expect(drains()).toBe(1);
    expect(await ahead.takeQuietly()).toEqual([]);
  });

  it('at stop, what was read ahead is released to peers (a fresh read: uncharged)', async () => {
    const { fake, ahead, released } = setUp();
    const ids = fake.seedJson(S, 2);
    await ahead.release(); // nothing in flight: nothing to do
    expect(released).toEqual([]);
    ahead.start();
    await ahead.release();
    expect(released).toEqual([{ ids, what: 'read-ahead' }]);
  });
});
