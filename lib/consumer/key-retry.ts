import { isNonRetryable } from '../errors/non-retryable.error';
import type { StreamMessage } from '../interfaces/stream-message.interface';
import { sleep } from './backoff';
import type { LoopContext } from './loop.types';
import { retryDelay } from './retry-policy';

/**
 * Retries in place for a partitioned stream (docs/partitions.md "Order"): a failed entry is run
 * again in its key's lane after the retry policy's delay, so the later entries of its key wait
 * behind it and those of other keys do not. It gives up (the runner then settles the failure as
 * usual: the dead-letter path for a `NonRetryableError` or the last allowed delivery) on a
 * `NonRetryableError`, on the last allowed delivery (`maxDeliveries`), with `retry: false`, and
 * when the loop stops (the entry stays pending for the partition's next owner).
 */
export class KeyRetry {
  constructor(
    private readonly context: Pick<
      LoopContext,
      'options' | 'isStopping' | 'signal' | 'logger' | 'where'
    >,
  ) {}

  /**
   * The next attempt of `message` after `error`, once its delay is over (`attempts` + 1); `null`
   * when it must not be run again here.
   */
  async next(
    message: StreamMessage<unknown>,
    error: unknown,
  ): Promise<StreamMessage<unknown> | null> {
    const { options, logger, where, signal } = this.context;
    const { retry: policy, maxDeliveries } = options;
    if (policy === false || isNonRetryable(error) || message.attempts >= maxDeliveries) return null;
    if (this.context.isStopping()) return null;
    const { delayMs, problem } = retryDelay(policy, message.attempts, error, message);
    if (problem !== undefined)
      logger.error(
        `${where}: custom retry policy failed for entry ${message.entryId} (id ${message.id}, ` +
          `attempt ${message.attempts}): ${problem}; retrying in ${delayMs} ms`,
      );
    await sleep(delayMs, signal);
    if (this.context.isStopping()) return null;
    return { ...message, attempts: message.attempts + 1 };
  }
}
