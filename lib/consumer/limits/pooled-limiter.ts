import type { ReadStarts, RateLimiter, StartLimiter } from './rate-limiter';

/**
 * The window of a read that took no starts: it holds in no window, so each of its entries takes
 * a start of its own as it begins.
 */
export const NO_STARTS_WINDOW = -1;

/**
 * The rate limiter as one loop of a handler sees it when the handler's loops share one pool of
 * starts: a partitioned handler, a loop per owned partition (docs/delivery.md "Rate limits").
 * The starts, the budget and the windows are the pool's; the waits end with the loop's `signal`.
 *
 * Its reads of new entries take no starts: a read that parked holding starts kept them from the
 * loops of the other partitions until its window ended, also when its own partition was empty
 * (36 entries of one partition of 8 at 6 per 500 ms took 23.5 s, not 3). Such a read asks for at
 * most `max` entries (one window's worth) and parks as long as an unthrottled one; each entry
 * takes its start as it begins ({@link StartLimiter.holds} is false for {@link NO_STARTS_WINDOW}),
 * waiting for the next window when this one is spent. The entries that wait are in hand, kept
 * claimed by the heartbeat, and no peer could read them: only the owner reads a partition.
 * Claims (the own PEL, sweeps, due retries) take their starts before they claim, as a loop of its
 * own does.
 */
export function pooledLimiter(pool: RateLimiter, max: number, signal: AbortSignal): StartLimiter {
  return {
    limits: true,
    acquire: (want) => pool.acquire(want, signal),
    take: (want) => pool.take(want, signal),
    refund: (count, window) => pool.refund(count, window),
    holds: (window) => pool.holds(window),
    // a read without starts: its entries take theirs one by one as they begin
    confirm: (count, window) =>
      window === NO_STARTS_WINDOW
        ? Promise.resolve(NO_STARTS_WINDOW)
        : pool.confirm(count, window, signal),
    readStarts: (want): Promise<ReadStarts> =>
      Promise.resolve({ count: Math.min(want, max), window: NO_STARTS_WINDOW, parkMs: Infinity }),
    readDone: () => undefined,
  };
}
