import type { ResolvedHandlerOptions } from '../../config/handler-definitions';
import type { StreamsClient } from '../../redis/stream-roles';
import { NO_RATE_LIMIT, rateLimiterFor, type StartLimiter } from './rate-limiter';
import { pooledLimiter } from './pooled-limiter';
import { StartSlots } from './start-slots';

/**
 * A handler's `concurrency` and `rateLimit` in one process, whatever the number of its loops: a
 * plain handler has one loop; a partitioned handler's loops (one per owned partition) share these,
 * so it never runs more than `concurrency` handler calls at once nor starts more than `max` per
 * `perMs` in the process, and its group budget (`scope: 'group'`) is the one of the stream's own
 * name (docs/partitions.md "Order").
 */
export interface HandlerLimits {
  /** The slots of `concurrency`: every handler call of every loop takes one. */
  readonly slots: StartSlots;
  /** The rate limit as one loop sees it: shared starts, waits ended by that loop's `signal`. */
  limiterFor(signal: AbortSignal): StartLimiter;
}

/**
 * The limits of the handler `options` describes, on `stream` (the partitioned stream's own name
 * for a partitioned handler) and `group`; `signal` ends every wait (the handler's stop).
 */
export function handlerLimits(
  options: Pick<ResolvedHandlerOptions, 'concurrency' | 'rateLimit'>,
  client: Pick<StreamsClient, 'takeRateBudget'>,
  stream: string,
  group: string,
  context: { readonly signal: AbortSignal; now(): number },
): HandlerLimits {
  const slots = new StartSlots(options.concurrency);
  const limiter =
    options.rateLimit === null
      ? null
      : rateLimiterFor(options.rateLimit, client, stream, group, context);
  return {
    slots,
    limiterFor: (signal) =>
      limiter === null
        ? NO_RATE_LIMIT
        : signal === context.signal
          ? limiter
          : pooledLimiter(limiter, options.rateLimit?.max ?? 1, signal),
  };
}
