/**
 * The one retry decision of every loop (the plain loop's RetryScheduler and a partitioned loop's
 * KeyRetry ask it): dead-letter now, leave pending, or retry after the policy's delay.
 */
import { NonRetryableError } from '../../lib/errors/non-retryable.error';
import type { RetryPolicy } from '../../lib/interfaces/delivery-control.interface';
import type { StreamMessage } from '../../lib/interfaces/stream-message.interface';
import { decideRetry, type RetryDecisionContext } from '../../lib/consumer/retry/retry-decision';
import { KeyRetry } from '../../lib/consumer/retry/key-retry';
import { RetryScheduler } from '../../lib/consumer/retry/retry-scheduler';
import { MemoryLogger } from '../support/engine';
import { keyed } from '../support/keyed-lanes';

/** Entry 5-0 with branded id order-7, on its `attempts`-th delivery. */
function message(attempts: number): StreamMessage<unknown> {
  return { ...keyed('5-0', undefined, attempts), id: 'order-7' };
}

function contextOf(retry: RetryPolicy | false, maxDeliveries = 3) {
  const logger = new MemoryLogger();
  const context: RetryDecisionContext = {
    where: "handler Orders.charge (stream 's', group 'g')",
    logger,
    options: { retry, maxDeliveries },
  };
  return { context, logger };
}

const fixed: RetryPolicy = { type: 'fixed', delayMs: 250 };

describe('decideRetry', () => {
  it('a NonRetryableError goes to the dead-letter path at once, whatever the attempt', () => {
    const { context } = contextOf(fixed);
    expect(decideRetry(context, message(1), new NonRetryableError('bad card'))).toEqual({
      kind: 'non-retryable',
    });
  });

  it('the last allowed delivery is exhausted; before it, the policy delay', () => {
    const { context } = contextOf(fixed, 3);
    expect(decideRetry(context, message(2), new Error('boom'))).toEqual({
      kind: 'retry',
      delayMs: 250,
    });
    expect(decideRetry(context, message(3), new Error('boom'))).toEqual({ kind: 'exhausted' });
  });

  it('retry: false leaves the entry pending (the reclaim after minIdleMs runs it again)', () => {
    const { context } = contextOf(false);
    expect(decideRetry(context, message(1), new Error('boom'))).toEqual({ kind: 'left-pending' });
    // the dead-letter reasons still come first
    expect(decideRetry(context, message(3), new Error('boom'))).toEqual({ kind: 'exhausted' });
  });

  it('a custom policy that throws: the fallback delay, logged with handler, stream, group and entry', () => {
    const { context, logger } = contextOf({
      type: 'custom',
      delayMs: () => {
        throw new Error('no delay today');
      },
    });
    expect(decideRetry(context, message(1), new Error('boom'))).toEqual({
      kind: 'retry',
      delayMs: 1000,
    });
    expect(logger.lines).toEqual([
      "error handler Orders.charge (stream 's', group 'g'): custom retry policy failed for entry " +
        '5-0 (id order-7, attempt 1): it threw: no delay today; retrying in 1000 ms',
    ]);
  });
});

describe('the loops ask the same decision', () => {
  it('RetryScheduler routes, KeyRetry answers a delay, for the same failures', () => {
    const { context } = contextOf(fixed, 3);
    const scheduler = new RetryScheduler({
      ...context,
      now: () => 0,
      counters: { retryScheduled: () => undefined, retriesWaiting: () => undefined },
    });
    const keyRetry = new KeyRetry({ ...context, isStopping: () => false });
    const cases = [
      { attempts: 1, error: new Error('boom') },
      { attempts: 3, error: new Error('boom') },
      { attempts: 1, error: new NonRetryableError('bad') },
    ];
    const routed = cases.map(({ attempts, error }) => {
      const m = { ...message(attempts), entryId: `${attempts}-${String(error.name)}` };
      const final = scheduler.route([{ message: m, error, claimedAt: 0, failedAt: 0 }]);
      if (final.nonRetryable.length > 0) return 'non-retryable';
      if (final.exhausted.length > 0) return 'exhausted';
      return scheduler.has(m.entryId) ? 'retry' : 'left-pending';
    });
    expect(routed).toEqual(['retry', 'exhausted', 'non-retryable']);
    expect(cases.map(({ attempts, error }) => keyRetry.delayOf(message(attempts), error))).toEqual([
      250,
      null,
      null,
    ]);
  });

  it('KeyRetry gives up when the loop stops (the entry stays pending for the next owner)', () => {
    const { context } = contextOf(fixed, 3);
    const keyRetry = new KeyRetry({ ...context, isStopping: () => true });
    expect(keyRetry.delayOf(message(1), new Error('boom'))).toBeNull();
  });
});
