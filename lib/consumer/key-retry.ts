import { isNonRetryable } from '../errors/non-retryable.error';
import type { StreamMessage } from '../interfaces/stream-message.interface';
import type { LoopContext } from './loop.types';
import { retryDelay } from './retry-policy';

/**
 * Retries for a partitioned stream (docs/partitions.md "Order"): a failed entry is run again
 * after the retry policy's delay with the later entries of its key parked behind it (`HeldKeys`),
 * those of other keys go on. It gives up (the runner then settles the failure as
 * usual: the dead-letter path for a `NonRetryableError` or the last allowed delivery) on a
 * `NonRetryableError`, on the last allowed delivery (`maxDeliveries`), with `retry: false`, and
 * when the loop stops (the entry stays pending for the partition's next owner).
 */
export class KeyRetry {
  constructor(
    private readonly context: Pick<LoopContext, 'options' | 'isStopping' | 'logger' | 'where'>,
  ) {}

  /**
   * How long `message` waits before its next attempt after `error`; `null` when it must not be
   * run again here.
   */
  delayOf(message: StreamMessage<unknown>, error: unknown): number | null {
    const { options, logger, where } = this.context;
    const { retry: policy, maxDeliveries } = options;
    if (policy === false || isNonRetryable(error) || message.attempts >= maxDeliveries) return null;
    if (this.context.isStopping()) return null;
    const { delayMs, problem } = retryDelay(policy, message.attempts, error, message);
    if (problem !== undefined)
      logger.error(
        `${where}: custom retry policy failed for entry ${message.entryId} (id ${message.id}, ` +
          `attempt ${message.attempts}): ${problem}; retrying in ${delayMs} ms`,
      );
    return delayMs;
  }
}
