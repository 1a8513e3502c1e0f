/** When a loop sweeps for dead peers' work (lib/consumer/health/sweep-pace.ts), on a clock the test moves. */
import { SweepPace } from '../../lib/consumer/health/sweep-pace';
import { manualClock } from '../support/loop-context';

describe('SweepPace', () => {
  it('sweeps at once, the second sweep at its phase of the interval, then every claimIntervalMs', () => {
    const clock = manualClock(0);
    const pace = new SweepPace(1000, 60_000, clock.now, 0.25);
    expect(pace.due()).toBe(true);
    pace.swept(5, 0);
    expect(pace.nextAt).toBe(250);
    clock.advance(249);
    expect(pace.due()).toBe(false);
    clock.advance(1);
    expect(pace.due()).toBe(true);
    pace.swept(5, 250);
    expect(pace.nextAt).toBe(1250);
  });

  it('a quiet group (empty PEL, nothing read) waits max(claimIntervalMs, minIdleMs / 2); a read ends the quiet', () => {
    const clock = manualClock(0);
    const pace = new SweepPace(1000, 60_000, clock.now, 1);
    pace.swept(0, 0);
    expect(pace.nextAt).toBe(30_000);
    clock.advance(100);
    pace.delivered();
    expect(pace.nextAt).toBe(1100);
    pace.delivered(); // already at the normal pace: no change
    expect(pace.nextAt).toBe(1100);
  });

  it('the phase is at least 1 ms, and a quiet loop with a short minIdleMs keeps claimIntervalMs', () => {
    const clock = manualClock(0);
    const pace = new SweepPace(1000, 500, clock.now, 0);
    pace.swept(0, 0);
    expect(pace.nextAt).toBe(1);
    pace.swept(0, 10);
    expect(pace.nextAt).toBe(1010);
  });
});
