/** The retry policy curves and the scheduler that holds waiting retries (no Redis: pure logic). */
import { NonRetryableError, isNonRetryable } from '../../lib/errors/non-retryable.error';
import type { RetryPolicy } from '../../lib/interfaces/delivery-control.interface';
import type { StreamMessage } from '../../lib/interfaces/stream-message.interface';
import { DEFAULT_RETRY_POLICY } from '../../lib/config/delivery-options';
import { retryDelay } from '../../lib/consumer/retry/retry-policy';
import { RetryScheduler, type FailedEntry } from '../../lib/consumer/retry/retry-scheduler';
import { MemoryLogger } from '../support/engine';
import { NO_TRANSACTION } from '../../lib/consumer/commit';

function message(entryId: string, attempts: number): StreamMessage<unknown> {
  return {
    id: `id-${entryId}`,
    entryId,
    stream: 's',
    group: 'g',
    consumer: 'c',
    payload: {},
    attempts,
    signal: new AbortController().signal,
    saveCheckpoint: async () => undefined,
    tx: NO_TRANSACTION,
  };
}

const failed = (entryId: string, attempts: number, error: unknown = new Error('boom')) =>
  ({
    message: message(entryId, attempts),
    error,
    claimedAt: 0,
    failedAt: 1000,
  }) satisfies FailedEntry;

describe('retryDelay', () => {
  const m = message('1-0', 1);

  it('fixed: the same delay after every attempt', () => {
    for (const attempt of [1, 2, 9]) {
      expect(retryDelay({ type: 'fixed', delayMs: 250 }, attempt, null, m).delayMs).toBe(250);
    }
  });

  it('exponential: initialMs * factor^(n-1), capped at maxMs; the default is 1 s doubling to 60 s', () => {
    const delays = [1, 2, 3, 4, 7, 8, 50, 5000].map(
      (n) => retryDelay(DEFAULT_RETRY_POLICY, n, null, m).delayMs,
    );
    expect(delays).toEqual([1000, 2000, 4000, 8000, 60_000, 60_000, 60_000, 60_000]);
    const p: RetryPolicy = { type: 'exponential', initialMs: 50, factor: 3, maxMs: 1000 };
    expect([1, 2, 3, 4, 5].map((n) => retryDelay(p, n, null, m).delayMs)).toEqual([
      50, 150, 450, 1000, 1000,
    ]);
  });

  it('exponential jitter spreads by at most ±jitter around the curve', () => {
    const p: RetryPolicy = { type: 'exponential', initialMs: 1000, jitter: 0.1 };
    expect(retryDelay(p, 1, null, m, () => 0).delayMs).toBe(900);
    expect(retryDelay(p, 1, null, m, () => 0.5).delayMs).toBe(1000);
    expect(retryDelay(p, 1, null, m, () => 0.999999).delayMs).toBe(1100);
  });

  it('custom: called with the failed attempt, the thrown value and the message', () => {
    const calls: unknown[][] = [];
    const error = new Error('x');
    const p: RetryPolicy = {
      type: 'custom',
      delayMs: (...args) => {
        calls.push(args);
        return 123.4;
      },
    };
    expect(retryDelay(p, 3, error, m)).toEqual({ delayMs: 123 });
    expect(calls).toEqual([[3, error, m]]);
  });

  it.each([
    ['NaN', () => Number.NaN, /returned NaN/],
    ['a negative number', () => -5, /returned -5/],
    ['Infinity', () => Infinity, /returned Infinity/],
    ['a string', () => '10' as unknown as number, /returned string/],
    [
      'a throw',
      () => {
        throw new Error('policy bug');
      },
      /threw: policy bug/,
    ],
  ])('custom returning %s: 1000 ms (the default first delay) and the reason', (_, fn, why) => {
    const result = retryDelay({ type: 'custom', delayMs: fn }, 1, null, m);
    expect(result.delayMs).toBe(1000);
    expect(result.problem).toMatch(why);
  });
});

describe('NonRetryableError', () => {
  it('is recognised by class and by name (another copy of the package)', () => {
    expect(isNonRetryable(new NonRetryableError('no'))).toBe(true);
    const foreign = Object.assign(new Error('no'), { name: 'NonRetryableError' });
    expect(isNonRetryable(foreign)).toBe(true);
    expect(isNonRetryable(new Error('NonRetryableError'))).toBe(false);
    expect(isNonRetryable('NonRetryableError')).toBe(false);
    expect(isNonRetryable(null)).toBe(false);
    expect(new NonRetryableError('no')).toBeInstanceOf(Error);
  });
});

describe('RetryScheduler', () => {
  function scheduler(policy: RetryPolicy | false = { type: 'fixed', delayMs: 100 }) {
    let now = 1000;
    const counters = { retrying: 0, totalRetries: 0 };
    const logger = new MemoryLogger();
    const s = new RetryScheduler({
      options: { retry: policy, maxDeliveries: 3 },
      where: 'T.h on s/g',
      logger,
      counters: {
        retryScheduled: () => void counters.totalRetries++,
        retriesWaiting: (count) => void (counters.retrying = count),
      },
      now: () => now,
    });
    return { s, counters, logger, advance: (ms: number) => (now += ms), now: () => now };
  }

  it('routes NonRetryableError and last-delivery failures to the dead-letter path, schedules the rest', () => {
    const { s, counters } = scheduler();
    const nonRetryable = failed('1-0', 1, new NonRetryableError('bad'));
    const exhausted = failed('2-0', 3);
    const final = s.route([nonRetryable, exhausted, failed('3-0', 1), failed('4-0', 2)]);
    expect(final).toEqual({ nonRetryable: [nonRetryable], exhausted: [exhausted] });
    expect(s.size).toBe(2);
    expect(counters).toEqual({ retrying: 2, totalRetries: 2 });
    expect(s.held.ids().sort()).toEqual(['3-0', '4-0']);
  });

  it('retry: false schedules nothing (the crash path) but still dead-letters final failures', () => {
    const { s } = scheduler(false);
    const final = s.route([failed('1-0', 1), failed('2-0', 3)]);
    expect(final.exhausted.map((f) => f.message.entryId)).toEqual(['2-0']);
    expect(s.size).toBe(0);
    expect(s.nextDueAt()).toBe(Infinity);
  });

  it('hands out due retries earliest first, never before their time, at most `limit` at once', () => {
    const { s, advance, counters } = scheduler({
      type: 'custom',
      delayMs: (_a, _e, m) => Number(m.entryId.split('-')[0]) * 10,
    });
    s.route([failed('30-0', 1), failed('10-0', 1), failed('20-0', 1), failed('40-0', 1)]);
    expect(s.nextDueAt()).toBe(1100);
    expect(s.takeDue(10)).toEqual([]);
    advance(99);
    expect(s.takeDue(10)).toEqual([]);
    advance(1);
    expect(s.takeDue(10)).toEqual(['10-0']);
    advance(200);
    expect(s.takeDue(2)).toEqual(['20-0', '30-0']);
    expect(s.has('20-0')).toBe(false);
    expect(s.has('40-0')).toBe(true);
    expect(counters.retrying).toBe(1);
    advance(99);
    expect(s.takeDue(2)).toEqual([]);
    advance(1);
    expect(s.takeDue(2)).toEqual(['40-0']);
    expect(s.nextDueAt()).toBe(Infinity);
    expect(counters).toEqual({ retrying: 0, totalRetries: 4 });
  });

  it('logs a misbehaving custom policy with the entry and uses 1000 ms', () => {
    const { s, logger } = scheduler({ type: 'custom', delayMs: () => Number.NaN });
    s.route([failed('5-0', 2)]);
    expect(s.nextDueAt()).toBe(2000);
    expect(
      logger.has(
        /error T\.h on s\/g: custom retry policy failed for entry 5-0 .*attempt 2.*NaN.*1000 ms/,
      ),
    ).toBe(true);
  });

  it('the heartbeat clock of the waiting set is that of its least recently claimed entry', () => {
    const { s } = scheduler();
    s.route([{ ...failed('1-0', 1), claimedAt: 900 }]);
    expect(s.held.touchedAt).toBe(900);
    s.route([{ ...failed('2-0', 1), claimedAt: 950 }]);
    expect(s.held.touchedAt).toBe(900);
    s.route([{ ...failed('3-0', 1), claimedAt: 800 }]);
    expect(s.held.touchedAt).toBe(800);
  });

  it('putBack makes taken retries due now and touched on the next heartbeat; takeAll empties it', () => {
    const { s, advance, counters } = scheduler();
    s.route([failed('1-0', 1), failed('2-0', 1)]);
    advance(100);
    const taken = s.takeDue(10);
    s.putBack(taken);
    expect(s.nextDueAt()).toBe(1100);
    expect(s.held.touchedAt).toBe(0);
    expect(counters.retrying).toBe(2);
    expect(s.takeAll()).toEqual([
      { entryId: '1-0', dueAt: 1100 },
      { entryId: '2-0', dueAt: 1100 },
    ]);
    expect(s.size).toBe(0);
    expect(s.held.ids()).toHaveLength(0);
    expect(s.nextDueAt()).toBe(Infinity);
    expect(counters.retrying).toBe(0);
  });

  it('keeps order under many random due times (heap property)', () => {
    const { s, advance } = scheduler({
      type: 'custom',
      delayMs: (_a, _e, m) => Number(m.entryId.split('-')[1]),
    });
    const delays = Array.from({ length: 500 }, (_, i) => (i * 7919) % 1000);
    s.route(delays.map((d, i) => failed(`${i}-${d}`, 1)));
    advance(1000);
    const out = s.takeDue(1000).map((id) => Number(id.split('-')[1]));
    expect(out).toHaveLength(500);
    expect(out).toEqual([...out].sort((a, b) => a - b));
  });
});
