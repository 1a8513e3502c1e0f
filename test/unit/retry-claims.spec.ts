/** Claiming due retries and releasing waiting ones at stop (lib/consumer/recover/retry-claims.ts). */
import type { FailedEntry } from '../../lib/consumer/context/loop-context';
import { NO_RATE_LIMIT } from '../../lib/consumer/limits/rate-limiter';
import { RetryClaims } from '../../lib/consumer/recover/retry-claims';
import { RetryScheduler } from '../../lib/consumer/retry/retry-scheduler';
import type { StreamMessage } from '../../lib/interfaces/stream-message.interface';
import type { RawEntry } from '../../lib/redis/streams-client';
import { FakeStreamsClient } from '../support/fake-streams-client';
import { C, G, S, manualClock, testLoop } from '../support/loop-context';

function setUp() {
  const clock = manualClock();
  const loop = testLoop(
    { minIdleMs: 10_000, retry: { type: 'fixed', delayMs: 1000 }, maxDeliveries: 5 },
    clock.now,
  );
  const fake = new FakeStreamsClient();
  fake.seedJson(S, 3);
  const ids = fake.deliverTo(S, G, C, 3);
  const scheduler = new RetryScheduler(loop.context);
  const processed: Array<{ ids: string[]; counts: Map<string, number> | null }> = [];
  const steps: string[] = [];
  let drains = 0;
  const claims = new RetryClaims(loop.context, {
    client: fake,
    scheduler,
    limiter: NO_RATE_LIMIT,
    settlement: { gone: async (gone) => void steps.push(`gone ${gone.join(',')}`) },
    delivery: {
      process: async (entries: readonly RawEntry[], counts: Map<string, number> | null) =>
        void processed.push({ ids: entries.map((e) => e.entryId), counts }),
    },
    health: { drainNeeded: () => void drains++ },
  });
  const fail = (entryId: string, failedAt = clock.now()): FailedEntry => ({
    message: { entryId, id: entryId, attempts: 1 } as StreamMessage<unknown>,
    error: new Error('x'),
    claimedAt: failedAt,
    failedAt,
  });
  return {
    clock,
    loop,
    fake,
    ids,
    scheduler,
    claims,
    processed,
    steps,
    drains: () => drains,
    fail,
  };
}

describe('RetryClaims', () => {
  it('claims due retries in stream order in one call and hands them on as the next attempt', async () => {
    const { clock, fake, ids, scheduler, claims, processed, fail } = setUp();
    scheduler.route([fail(ids[2]), fail(ids[0])]);
    expect(claims.due()).toBe(false);
    expect(claims.nextDueAt()).toBe(clock.now() + 1000);
    clock.advance(1000);
    expect(claims.due()).toBe(true);
    await claims.runDue();
    expect(fake.callsOf('reclaim').map((c) => c.args)).toEqual([[S, G, C, [ids[0], ids[2]]]]);
    expect(processed.map((p) => p.ids)).toEqual([[ids[0], ids[2]]]);
    // XCLAIM without JUSTID counted the new attempt
    expect([ids[0], ids[2]].map((id) => processed[0].counts!.get(id))).toEqual([2, 2]);
    expect(scheduler.size).toBe(0);
  });

  it('a retry deleted from the stream while it waited is settled as gone', async () => {
    const { clock, fake, ids, scheduler, claims, processed, steps, fail } = setUp();
    scheduler.route([fail(ids[0]), fail(ids[1])]);
    fake.deleteEntries(S, [ids[1]]);
    clock.advance(1000);
    await claims.runDue();
    expect(steps).toEqual([`gone ${ids[1]}`]);
    expect(processed.map((p) => p.ids)).toEqual([[ids[0]]]);
  });

  it('a retry a peer took over (this process froze) or acked is left to it, never claimed back', async () => {
    const { clock, loop, fake, ids, scheduler, claims, processed, steps, fail } = setUp();
    scheduler.route([fail(ids[0]), fail(ids[1]), fail(ids[2])]);
    fake.hold(S, G, 'peer', [ids[1]]);
    await fake.ack(S, G, [ids[2]]);
    clock.advance(1000);
    await claims.runDue();
    expect(processed.map((p) => p.ids)).toEqual([[ids[0]]]);
    expect(steps).toEqual([]); // not settled here: not ours
    const rows = await fake.pending(S, G, { start: '-', end: '+', count: 10 });
    expect(rows.map((r) => [r.entryId, r.consumer])).toEqual([
      [ids[0], C],
      [ids[1], 'peer'],
    ]);
    expect(
      loop.logger.has(new RegExp(`due retries \\(${ids[1]}, ${ids[2]}\\) are no longer`)),
    ).toBe(true);
  });

  it('a failed XCLAIM puts the retries back (due now); a failure after it asks for a drain', async () => {
    const { clock, fake, ids, scheduler, claims, drains, fail } = setUp();
    scheduler.route([fail(ids[0])]);
    clock.advance(1000);
    fake.fail('reclaim');
    await expect(claims.runDue()).rejects.toThrow(/injected reclaim failure/);
    expect(scheduler.has(ids[0])).toBe(true);
    expect(drains()).toBe(0);
    fake.fail('pending');
    await expect(claims.runDue()).rejects.toThrow(/injected pending failure/);
    expect(scheduler.has(ids[0])).toBe(false);
    expect(drains()).toBe(1);
  });

  it('at stop, waiting retries go to peers with idle times that make them due when they would be here', async () => {
    const { clock, loop, fake, ids, scheduler, claims, fail } = setUp();
    scheduler.route([fail(ids[0]), fail(ids[1])]);
    clock.advance(600);
    scheduler.route([fail(ids[2])]);
    await claims.releaseAll();
    // due in 400 and 1000 ms: idle 10000 - 400 = 9600 and 9000, rounded down to 500 ms buckets
    expect(fake.callsOf('release').map((c) => [c.args[3], c.args[4]])).toEqual([
      [[ids[0], ids[1]], 9500],
      [[ids[2]], 9000],
    ]);
    expect(scheduler.size).toBe(0);
    expect(loop.logger.has(/released 3 waiting retries to peers/)).toBe(true);
  });

  it('a release that fails at stop is logged, never thrown', async () => {
    const { loop, fake, ids, scheduler, claims, fail } = setUp();
    scheduler.route([fail(ids[0])]);
    fake.fail('release');
    await claims.releaseAll();
    expect(loop.logger.has(/releasing 1 waiting retries at shutdown failed/)).toBe(true);
  });
});
