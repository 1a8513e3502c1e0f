import { errorText } from '../../codec/codecs';
import type { RetryPolicy } from '../../interfaces/delivery-control.interface';
import type { StreamMessage } from '../../interfaces/stream-message.interface';
import { DEFAULT_RETRY_POLICY } from '../../config/delivery-options';

/** What a custom policy's bad answer falls back to (the default policy's first delay). */
export const FALLBACK_RETRY_DELAY_MS = DEFAULT_RETRY_POLICY.initialMs;

/** A planned delay, and why the policy's own answer was not used (a custom function misbehaved). */
export interface RetryDelay {
  delayMs: number;
  problem?: string;
}

/**
 * The delay after a failure on `attempt` (1-based) under `policy`. Pure apart from `random`
 * (jitter only); a custom function that throws or returns something other than a finite number
 * >= 0 yields {@link FALLBACK_RETRY_DELAY_MS} and says why.
 */
export function retryDelay(
  policy: RetryPolicy,
  attempt: number,
  error: unknown,
  message: StreamMessage,
  random: () => number = Math.random,
): RetryDelay {
  switch (policy.type) {
    case 'fixed':
      return { delayMs: policy.delayMs };
    case 'exponential': {
      const factor = policy.factor ?? DEFAULT_RETRY_POLICY.factor;
      const maxMs = policy.maxMs ?? DEFAULT_RETRY_POLICY.maxMs;
      const jitter = policy.jitter ?? DEFAULT_RETRY_POLICY.jitter;
      // the exponent is capped so a huge attempt count cannot overflow to Infinity before the cap
      const base = Math.min(maxMs, policy.initialMs * factor ** Math.min(attempt - 1, 1000));
      const spread = jitter > 0 ? base * jitter * (2 * random() - 1) : 0;
      return { delayMs: Math.max(0, Math.round(base + spread)) };
    }
    case 'custom': {
      let value: unknown;
      try {
        value = policy.delayMs(attempt, error, message);
      } catch (err) {
        return { delayMs: FALLBACK_RETRY_DELAY_MS, problem: `it threw: ${errorText(err)}` };
      }
      if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
        return {
          delayMs: FALLBACK_RETRY_DELAY_MS,
          problem: `it returned ${typeof value === 'number' ? String(value) : typeof value}, not a finite number >= 0`,
        };
      }
      return { delayMs: Math.round(value) };
    }
  }
}
