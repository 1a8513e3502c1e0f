import { isNonRetryable } from '../../errors/non-retryable.error';
import type { ResolvedHandlerOptions } from '../../config/handler-definitions';
import type { StreamMessage } from '../../interfaces/stream-message.interface';
import type { LoopContext } from '../context';
import { retryDelay } from './retry-policy';

/**
 * What becomes of an entry whose attempt failed; one decision for every loop (the plain loop's
 * `RetryScheduler`, a partitioned loop's `KeyRetry`):
 * - `non-retryable`: the handler threw a `NonRetryableError`: the dead-letter path now;
 * - `exhausted`: that was the last allowed delivery (`attempts >= maxDeliveries`): the same;
 * - `left-pending`: `retry: false`: it stays pending, for the reclaim after `minIdleMs`;
 * - `retry`: run it again after `delayMs` (the retry policy's delay).
 */
export type RetryDecision =
  | { readonly kind: 'non-retryable' }
  | { readonly kind: 'exhausted' }
  | { readonly kind: 'left-pending' }
  | { readonly kind: 'retry'; readonly delayMs: number };

/** The few things of the loop the decision needs (a custom policy's failure is logged). */
export type RetryDecisionContext = Pick<LoopContext, 'where' | 'logger'> & {
  readonly options: Pick<ResolvedHandlerOptions, 'retry' | 'maxDeliveries'>;
};

/**
 * Decides what becomes of `message` after `error` ({@link RetryDecision}). A custom policy that
 * throws or answers something other than a delay is logged (handler, stream, group and entry) and
 * the fallback delay is used.
 */
export function decideRetry(
  context: RetryDecisionContext,
  message: StreamMessage<unknown>,
  error: unknown,
): RetryDecision {
  const { options, logger, where } = context;
  if (isNonRetryable(error)) return { kind: 'non-retryable' };
  if (message.attempts >= options.maxDeliveries) return { kind: 'exhausted' };
  if (options.retry === false) return { kind: 'left-pending' };
  const { delayMs, problem } = retryDelay(options.retry, message.attempts, error, message);
  if (problem !== undefined)
    logger.error(
      `${where}: custom retry policy failed for entry ${message.entryId} (id ${message.id}, ` +
        `attempt ${message.attempts}): ${problem}; retrying in ${delayMs} ms`,
    );
  return { kind: 'retry', delayMs };
}
