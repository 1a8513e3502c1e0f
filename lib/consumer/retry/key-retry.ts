import type { StreamMessage } from '../../interfaces/stream-message.interface';
import type { LoopContext } from '../context';
import { decideRetry, type RetryDecisionContext } from './retry-decision';

/**
 * Retries for a partitioned stream (docs/partitions.md "Order"): a failed entry is run again
 * after the retry policy's delay with the later entries of its key parked behind it (`HeldKeys`),
 * those of other keys go on. It gives up (the runner then settles the failure as
 * usual: the dead-letter path for a `NonRetryableError` or the last allowed delivery) on a
 * `NonRetryableError`, on the last allowed delivery (`maxDeliveries`), with `retry: false`, and
 * when the loop stops (the entry stays pending for the partition's next owner).
 */
export class KeyRetry {
  constructor(private readonly context: RetryDecisionContext & Pick<LoopContext, 'isStopping'>) {}

  /**
   * How long `message` waits before its next attempt after `error`; `null` when it must not be
   * run again here.
   */
  delayOf(message: StreamMessage<unknown>, error: unknown): number | null {
    // the stop first: nothing is asked of a custom policy for an entry left to the next owner
    if (this.context.isStopping()) return null;
    const decision = decideRetry(this.context, message, error);
    return decision.kind === 'retry' ? decision.delayMs : null;
  }
}
