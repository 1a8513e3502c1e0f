/** RateTracker: events per second over a sliding window of one-second buckets, under a fake clock. */
import { RateTracker } from '../../lib/consumer/context/rate-tracker';

function fakeClock(start: number) {
  let now = start;
  return { now: () => now, set: (ms: number) => (now = ms), advance: (ms: number) => (now += ms) };
}

describe('RateTracker', () => {
  const T0 = 1_700_000_000_000; // a whole second

  it('is 0 before anything happened', () => {
    const clock = fakeClock(T0);
    expect(new RateTracker(10, clock.now).rate()).toBe(0);
  });

  it('averages over the window, the current second included', () => {
    const clock = fakeClock(T0);
    const rate = new RateTracker(10, clock.now);
    rate.add(30);
    expect(rate.rate()).toBe(3);
    clock.advance(999);
    rate.add(20);
    expect(rate.rate()).toBe(5);
    clock.advance(1); // next second
    rate.add(50);
    expect(rate.rate()).toBe(10);
  });

  it('slides: a bucket leaves the window 10 s after its second started', () => {
    const clock = fakeClock(T0);
    const rate = new RateTracker(10, clock.now);
    rate.add(10); // second 0
    clock.set(T0 + 5000);
    rate.add(20); // second 5
    clock.set(T0 + 9999);
    expect(rate.rate()).toBe(3); // both in
    clock.set(T0 + 10_000);
    expect(rate.rate()).toBe(2); // second 0 expired
    clock.set(T0 + 14_999);
    expect(rate.rate()).toBe(2);
    clock.set(T0 + 15_000);
    expect(rate.rate()).toBe(0); // all expired
  });

  it('reuses a slot for a new second without carrying the old count', () => {
    const clock = fakeClock(T0);
    const rate = new RateTracker(10, clock.now);
    rate.add(100); // slot of second 0
    clock.set(T0 + 10_000); // same slot, 10 s later
    rate.add(7);
    expect(rate.rate()).toBeCloseTo(0.7);
  });

  it('forgets everything after a long gap', () => {
    const clock = fakeClock(T0);
    const rate = new RateTracker(10, clock.now);
    for (let i = 0; i < 10; i++) {
      rate.add(10);
      clock.advance(1000);
    }
    clock.advance(-1000);
    expect(rate.rate()).toBe(10);
    clock.advance(3_600_000);
    expect(rate.rate()).toBe(0);
    rate.add(4);
    expect(rate.rate()).toBeCloseTo(0.4);
  });

  it('honours another window length', () => {
    const clock = fakeClock(T0);
    const rate = new RateTracker(2, clock.now);
    rate.add(4);
    clock.advance(1000);
    rate.add(2);
    expect(rate.rate()).toBe(3);
    clock.advance(1000);
    expect(rate.rate()).toBe(1);
  });
});
