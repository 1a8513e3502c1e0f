/**
 * The pause of a group (lib/consumer/read/pause-watch.ts, lib/consumer/read/pause-gate.ts): the flags of
 * every loop of a group name read in one MGET per interval, shared by concurrent asks; the gate
 * reads the flag when due, holds the beat while paused (state `paused`, acks sent, a wait until
 * the next read), and lets it go on once resumed.
 */
import { PauseGate } from '../../lib/consumer/read/pause-gate';
import { NEVER_PAUSED, PauseWatch, PauseWatchPool } from '../../lib/consumer/read/pause-watch';
import type { PauseTarget } from '../../lib/redis/stream-roles';
import { manualClock, testLoop, tick } from '../support/loop-context';

/** A pause switch in memory that counts its MGETs. */
class MemoryPauses {
  readonly paused = new Set<string>();
  readonly reads: Array<{ group: string; streams: readonly string[] }> = [];
  async pausedSince(targets: readonly PauseTarget[]): Promise<(number | null)[]> {
    const groups = [...new Set(targets.map((t) => t.group))];
    expect(groups).toHaveLength(1); // a watch reads one group name
    this.reads.push({ group: groups[0], streams: targets.map((t) => t.stream) });
    await tick();
    return targets.map(({ stream, group }) => (this.paused.has(`${stream}/${group}`) ? 1 : null));
  }
}

describe('PauseWatch', () => {
  it('reads the flags of every member in one MGET, shared by concurrent asks, again only once maxAgeMs passed', async () => {
    const clock = manualClock();
    const pauses = new MemoryPauses();
    pauses.paused.add('b/g');
    const watch = new PauseWatch(pauses, 'g', clock.now);
    const a = watch.member('a');
    const b = watch.member('b');
    expect(a.readAt).toBe(Number.NEGATIVE_INFINITY);
    expect(await Promise.all([a.isPaused(300), b.isPaused(300)])).toEqual([false, true]);
    expect(pauses.reads).toEqual([{ group: 'g', streams: ['a', 'b'] }]);
    expect(a.readAt).toBe(clock.now());
    expect(b.readAt).toBe(clock.now());

    pauses.paused.add('a/g');
    clock.advance(299);
    expect(await a.isPaused(300)).toBe(false); // the flag read 299 ms ago
    expect(pauses.reads).toHaveLength(1);
    clock.advance(1);
    expect(await a.isPaused(300)).toBe(true);
    expect(await b.isPaused(300)).toBe(true); // the same read served b
    expect(pauses.reads).toHaveLength(2);
  });

  it('a failed read is thrown to the asker and read again next time', async () => {
    const clock = manualClock();
    let fail = true;
    const watch = new PauseWatch(
      {
        pausedSince: async (targets) => {
          if (fail) throw new Error('link down');
          return targets.map(() => null);
        },
      },
      'g',
      clock.now,
    );
    const a = watch.member('a');
    await expect(a.isPaused(300)).rejects.toThrow('link down');
    expect(a.readAt).toBe(Number.NEGATIVE_INFINITY);
    fail = false;
    await expect(a.isPaused(300)).resolves.toBe(false);
  });

  it('the pool shares one watch per group name and partition', async () => {
    const pauses = new MemoryPauses();
    const pool = new PauseWatchPool(pauses, (stream) => (stream.startsWith('x') ? '1' : '2'));
    const probes = [pool.probe('g', 'x1'), pool.probe('g', 'x2'), pool.probe('g', 'y1')];
    pool.probe('h', 'x3');
    await Promise.all(probes.map((p) => p.isPaused(300)));
    expect(pauses.reads.map((r) => r.streams).sort()).toEqual([['x1', 'x2'], ['y1']]);
  });
});

describe('PauseGate', () => {
  function setUp() {
    const clock = manualClock();
    const loop = testLoop({ claimIntervalMs: 300 }, clock.now);
    const pauses = new MemoryPauses();
    const probe = new PauseWatch(pauses, 'g', clock.now).member('orders');
    let flushes = 0;
    const gate = new PauseGate(loop.context, {
      probe,
      acks: { flush: async () => void flushes++ },
    });
    return { clock, loop, pauses, gate, flushes: () => flushes };
  }

  it('is due at once, then every claimIntervalMs from the last read; not paused: the beat goes on', async () => {
    const { clock, pauses, gate } = setUp();
    expect(gate.due()).toBe(true);
    expect(await gate.holds()).toBe(false);
    expect(pauses.reads).toHaveLength(1);
    expect(gate.nextAt).toBe(clock.now() + 300);
    expect(gate.due()).toBe(false);
    expect(await gate.holds()).toBe(false);
    expect(pauses.reads).toHaveLength(1); // not due: no command
    // a shared read hands the loop back a few ms early: that counts as the instant reached
    clock.advance(294);
    expect(gate.due()).toBe(false);
    clock.advance(2);
    expect(gate.due()).toBe(true);
    expect(await gate.holds()).toBe(false);
    expect(pauses.reads).toHaveLength(2);
  });

  it('paused: shows paused, sends the acks, waits until the next read is due and holds the beat; resumed: goes on', async () => {
    const { loop, pauses, gate, flushes } = setUp();
    pauses.paused.add('orders/g');
    let held: boolean | undefined;
    const holding = gate.holds().then((h) => (held = h));
    await tick(20);
    expect(held).toBeUndefined(); // waiting for the next read (the manual clock stands still)
    expect(gate.isPaused).toBe(true);
    expect(loop.counters.snapshot().state).toBe('paused');
    expect(flushes()).toBe(1);
    expect(loop.logger.has(/group paused/)).toBe(true);
    loop.stop(); // a stop ends the wait
    await holding;
    expect(held).toBe(true);

    const { clock: c2, pauses: p2, gate: g2, loop: l2 } = setUp();
    p2.paused.add('orders/g');
    const first = g2.holds();
    await tick(5);
    p2.paused.clear();
    c2.advance(300);
    await first;
    expect(await g2.holds()).toBe(false);
    expect(g2.isPaused).toBe(false);
    expect(l2.logger.has(/group resumed/)).toBe(true);
  });

  it('a loop whose client has no pause switch is never due and never paused', async () => {
    const loop = testLoop({ claimIntervalMs: 300 });
    const gate = new PauseGate(loop.context, {
      probe: NEVER_PAUSED,
      acks: { flush: async () => undefined },
    });
    expect(gate.due()).toBe(false);
    expect(gate.nextAt).toBe(Number.POSITIVE_INFINITY);
    expect(await gate.holds()).toBe(false);
  });
});
