/** The figures a loop keeps (lib/consumer/context/consumer-counters.ts), written through its methods. */
import { ConsumerCounters } from '../../lib/consumer/context/consumer-counters';
import { manualClock } from '../support/loop-context';

describe('ConsumerCounters', () => {
  it('starts at zero, starting, with the loop identity', () => {
    const counters = new ConsumerCounters({
      stream: 's',
      group: 'g',
      consumer: 'c',
      handler: 'T.h',
    });
    expect(counters.snapshot()).toEqual({
      stream: 's',
      group: 'g',
      consumer: 'c',
      handler: 'T.h',
      state: 'starting',
      totalRead: 0,
      totalAcked: 0,
      totalDlq: 0,
      totalErrors: 0,
      totalDeleted: 0,
      totalDuplicates: 0,
      totalStale: 0,
      totalFenced: 0,
      retrying: 0,
      totalRetries: 0,
      tpsIn: 0,
      tpsOut: 0,
      lastError: null,
    });
  });

  it('each method moves its own figure; rates follow reads and acks', () => {
    const clock = manualClock(100_000);
    const counters = new ConsumerCounters(
      { stream: 's', group: 'g', consumer: 'c', handler: 'T.h' },
      clock.now,
    );
    counters.read(30);
    counters.read(10);
    counters.acked(20);
    counters.deleted(2);
    counters.skipped('duplicate', 3);
    counters.skipped('stale', 5);
    counters.skipped('duplicate', 1);
    counters.fenced(2);
    counters.fenced(1);
    counters.deadLettered(1);
    counters.handlerFailed('boom');
    counters.handlerFailed('bang');
    counters.retryScheduled();
    counters.retriesWaiting(4);
    counters.retriesWaiting(3);
    counters.setState('running');
    const snap = counters.snapshot();
    expect(snap).toMatchObject({
      state: 'running',
      totalRead: 40,
      totalAcked: 20,
      totalDeleted: 2,
      totalDuplicates: 4,
      totalStale: 5,
      totalFenced: 3,
      totalDlq: 1,
      totalErrors: 2,
      lastError: 'bang',
      totalRetries: 1,
      retrying: 3,
    });
    expect(snap.tpsIn).toBeGreaterThan(0);
    expect(snap.tpsOut).toBeGreaterThan(0);
    expect(snap.tpsIn).toBeCloseTo(snap.tpsOut * 2);
    counters.errorSeen('ECONNRESET'); // not a handler error
    expect(counters.snapshot()).toMatchObject({ totalErrors: 2, lastError: 'ECONNRESET' });
    counters.heldRetriesWaiting(2); // a partition loop's held keys add theirs
    expect(counters.snapshot().retrying).toBe(5);
    counters.retriesWaiting(0);
    expect(counters.snapshot().retrying).toBe(2);
  });

  it('a snapshot is a copy: later updates do not change it', () => {
    const counters = new ConsumerCounters({
      stream: 's',
      group: 'g',
      consumer: 'c',
      handler: 'T.h',
    });
    const before = counters.snapshot();
    counters.read(1);
    expect(before.totalRead).toBe(0);
  });
});
