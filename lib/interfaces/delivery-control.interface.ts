import type { StreamMessage } from './stream-message.interface';

/**
 * When a failed entry is handed to a handler again (docs/delivery.md "Retries"). The delay is
 * measured from the failure of attempt `n` to the start of attempt `n + 1`.
 *
 * @see docs/delivery.md "Retries"
 */
export type RetryPolicy =
  | {
      /** The same delay after every failure. */
      type: 'fixed';
      /** Delay in ms (integer >= 0). */
      delayMs: number;
    }
  | {
      /** `min(maxMs, initialMs * factor^(n-1))` after a failure on attempt `n`, spread by `±jitter`. */
      type: 'exponential';
      /** Delay after the first failure, in ms (integer >= 0). */
      initialMs: number;
      /**
       * Growth per attempt (>= 1).
       * @default 2
       */
      factor?: number;
      /**
       * Cap of the delay in ms.
       * @default 60000
       */
      maxMs?: number;
      /**
       * Random spread of each delay, as a fraction (0..1): 0.1 = ±10 %.
       * @default 0
       */
      jitter?: number;
    }
  | {
      /** Your own curve. */
      type: 'custom';
      /**
       * Returns the delay in ms after a failure on `attempt` (the attempt that failed), given the
       * thrown value (`undefined` for a batch entry that was not returned for ack) and the message.
       * A throw or a result that is not a finite number >= 0 is logged and 1000 ms is used.
       */
      delayMs: (attempt: number, error: unknown, message: StreamMessage) => number;
    };

/**
 * A cap on handler starts (docs/delivery.md "Rate limits"): at most `max` per window of `perMs`.
 *
 * @see docs/delivery.md "Rate limits"
 */
export interface RateLimitOptions {
  /** Handler starts allowed per window (integer >= 1). */
  max: number;
  /** Window length in ms (integer >= 1). */
  perMs: number;
  /**
   * `'process'`: this loop's own budget. `'group'`: one budget shared by every consumer of the
   * group, kept in Redis (one script call per refill, not per entry).
   * @default 'process'
   */
  scope?: 'process' | 'group';
}
