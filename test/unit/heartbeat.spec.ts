/** The heartbeat (lib/consumer/health/heartbeat.ts): the only code that touches held entries. */
import { jest } from '@jest/globals';
import { Heartbeat, HeldEntries } from '../../lib/consumer/health/heartbeat';
import { FakeStreamsClient } from '../support/fake-streams-client';
import { C, G, S, manualClock, testLoop } from '../support/loop-context';

function setUp() {
  const clock = manualClock();
  const loop = testLoop({ minIdleMs: 1000 }, clock.now);
  const fake = new FakeStreamsClient();
  fake.seedJson(S, 4);
  const ids = fake.deliverTo(S, G, C, 4);
  return { clock, loop, fake, ids, heartbeat: new Heartbeat(loop.context, fake) };
}

describe('Heartbeat', () => {
  it('re-claims a held set once it is held minIdleMs / 2, not before, then not again until due', async () => {
    const { clock, fake, ids, heartbeat } = setUp();
    heartbeat.hold('inHand', () => ids.slice(0, 2));
    clock.advance(499);
    await heartbeat.tick();
    expect(fake.callsOf('touch')).toHaveLength(0);
    clock.advance(1);
    await heartbeat.tick();
    expect(fake.callsOf('touch').map((c) => c.args)).toEqual([[S, G, C, ids.slice(0, 2)]]);
    clock.advance(499);
    await heartbeat.tick();
    expect(fake.callsOf('touch')).toHaveLength(1);
  });

  it('touches every kind of held entries in one tick, in a fixed order; dropped ones no more', async () => {
    const { clock, fake, ids, heartbeat } = setUp();
    heartbeat.hold('retries', () => [ids[3]]);
    heartbeat.hold('readAhead', () => [ids[2]]);
    heartbeat.hold('deadLetters', () => [ids[1]]);
    heartbeat.hold('inHand', () => [ids[0]]);
    clock.advance(600);
    await heartbeat.tick();
    expect(fake.callsOf('touch').map((c) => c.args[3])).toEqual([
      [ids[0]],
      [ids[1]],
      [ids[2]],
      [ids[3]],
    ]);
    heartbeat.drop('deadLetters');
    clock.advance(600);
    await heartbeat.tick();
    expect(
      fake
        .callsOf('touch')
        .slice(4)
        .map((c) => c.args[3]),
    ).toEqual([[ids[0]], [ids[2]], [ids[3]]]);
  });

  it('a failed touch is logged and tried again on the next tick', async () => {
    const { clock, loop, fake, ids, heartbeat } = setUp();
    heartbeat.hold('inHand', () => [ids[0]]);
    clock.advance(600);
    fake.fail('touch');
    await heartbeat.tick();
    expect(loop.logger.has(/warn T\.h on orders\/g: heartbeat failed \(.*injected touch/)).toBe(
      true,
    );
    await heartbeat.tick(); // no time passed: due again because the touch failed
    expect(fake.callsOf('touch')).toHaveLength(2);
  });

  it('never takes back an entry a peer took over (this process froze): named once, not touched again', async () => {
    const { clock, loop, fake, ids, heartbeat } = setUp();
    heartbeat.hold('inHand', () => ids.slice(0, 3));
    fake.hold(S, G, 'peer', [ids[1]]);
    clock.advance(600);
    await heartbeat.tick();
    expect(fake.pel(S, G).get(ids[1])?.consumer).toBe('peer');
    expect(fake.pel(S, G).get(ids[0])?.consumer).toBe(C);
    const named = (line: string) =>
      line.includes(`entries ${ids[1]} are no longer this consumer's`);
    expect(loop.logger.lines.filter(named)).toHaveLength(1);
    clock.advance(600);
    await heartbeat.tick();
    expect(fake.callsOf('touch').map((c) => c.args[3])).toEqual([
      ids.slice(0, 3),
      [ids[0], ids[2]],
    ]);
    expect(loop.logger.lines.filter(named)).toHaveLength(1);
  });

  it('an empty set costs no command and keeps its clock', async () => {
    const { clock, fake, heartbeat } = setUp();
    const held = heartbeat.hold('retries', () => [], 0);
    clock.advance(600);
    await heartbeat.tick();
    expect(fake.callsOf('touch')).toHaveLength(0);
    expect(held.touchedAt).toBe(0);
  });

  it('start ticks on its own every minIdleMs / 4 until stop', async () => {
    jest.useFakeTimers();
    try {
      const { clock, fake, ids, heartbeat } = setUp();
      heartbeat.hold('inHand', () => [ids[0]]);
      heartbeat.start();
      clock.advance(600);
      await jest.advanceTimersByTimeAsync(250);
      expect(fake.callsOf('touch')).toHaveLength(1);
      heartbeat.stop();
      clock.advance(600);
      await jest.advanceTimersByTimeAsync(1000);
      expect(fake.callsOf('touch')).toHaveLength(1);
    } finally {
      jest.useRealTimers();
    }
  });
});

describe('HeldEntries', () => {
  it('its clock is that of its least recently claimed entry; touchSoon makes it due at once', () => {
    let ids = ['1-0'];
    const held = new HeldEntries(() => ids, 900);
    held.joined(950, false);
    expect(held.touchedAt).toBe(900);
    held.joined(800, false);
    expect(held.touchedAt).toBe(800);
    held.joined(990, true); // the set was empty: its clock starts over
    expect(held.touchedAt).toBe(990);
    expect(held.dueAt(1000, 1000)).toEqual([]);
    held.touchSoon();
    ids = ['1-0', '2-0'];
    expect(held.dueAt(1000, 1000)).toEqual(['1-0', '2-0']);
  });
});
