import type { RateLimitOptions } from '../interfaces/delivery-control.interface';
import type { StreamsClient } from '../redis/stream-roles';
import { sleep } from './backoff';

/** One refill: starts granted from the current window and the ms until that window ends. */
export interface RateGrant {
  granted: number;
  windowLeftMs: number;
}

/** Where starts come from: this process's own window, or the group's budget in Redis. */
export interface RateBudget {
  /** Takes up to `want` starts from the current window (0 when it is spent). */
  take(want: number): Promise<RateGrant>;
}

/**
 * What the loop asks before it reads: how many entries it may read (and start) now. A handler
 * without `rateLimit` gets {@link NO_RATE_LIMIT}, which always allows a whole batch.
 */
export interface StartLimiter {
  /** `false`: no rate limit; nothing ever waits for a window. */
  readonly limits: boolean;
  /** How many entries the loop may read now, up to `want` (0 once the loop stops). */
  acquire(want: number): Promise<number>;
  /** Gives back starts a read did not use. */
  refund(count: number): void;
  /** How long (ms) the starts in hand stay good. */
  validForMs(): number;
  /** Before `count` read entries start: takes fresh starts when their window is over. */
  confirm(count: number): Promise<void>;
}

/** The limiter of a handler without `rateLimit`: every read may take a whole batch. */
export const NO_RATE_LIMIT: StartLimiter = Object.freeze({
  limits: false,
  acquire: (want: number) => Promise.resolve(want),
  refund: () => undefined,
  validForMs: () => Infinity,
  confirm: () => Promise.resolve(),
});

/** The few things of the loop the limiter needs. */
export interface RateLimiterContext {
  /** Aborted at stop: a wait for the next window ends at once. */
  readonly signal: AbortSignal;
  now(): number;
}

/**
 * `rateLimit: { scope: 'process' }`: fixed windows of `perMs` on this process's clock, at most
 * `max` starts granted per window.
 */
export class ProcessRateBudget implements RateBudget {
  private window = -1;
  private used = 0;

  constructor(
    private readonly limit: Pick<RateLimitOptions, 'max' | 'perMs'>,
    private readonly now: () => number,
  ) {}

  take(want: number): Promise<RateGrant> {
    const { max, perMs } = this.limit;
    const now = this.now();
    const window = Math.floor(now / perMs);
    if (window !== this.window) {
      this.window = window;
      this.used = 0;
    }
    const granted = Math.max(0, Math.min(want, max - this.used));
    this.used += granted;
    return Promise.resolve({ granted, windowLeftMs: (window + 1) * perMs - now });
  }
}

/**
 * Gates handler starts on a {@link RateBudget} so that a throttled loop never reads more entries
 * than it may start: the loop asks {@link acquire} how many it may read, reads at most that many,
 * and gives back what the read did not use ({@link refund}). Starts are taken from the budget in
 * refills (one call for many starts); what a refill granted is good until the end of its window.
 * A batch about to start after its window ended takes fresh starts first ({@link confirm}).
 */
export class RateLimiter implements StartLimiter {
  readonly limits = true;
  private permits = 0;
  private validUntil = 0;

  constructor(
    private readonly budget: RateBudget,
    private readonly context: RateLimiterContext,
  ) {}

  /**
   * How many entries the loop may read (and start) now, up to `want`; waits for the next window
   * when the budget is spent. At least 1, or 0 once the loop stops.
   */
  async acquire(want: number): Promise<number> {
    const { signal, now } = this.context;
    while (!signal.aborted) {
      if (now() >= this.validUntil) this.permits = 0;
      if (this.permits < want) {
        // top up in one refill; what is in hand goes out even when the budget is spent
        const { granted, windowLeftMs } = await this.budget.take(want - this.permits);
        if (granted > 0) {
          if (this.permits === 0) this.validUntil = now() + windowLeftMs;
          this.permits += granted;
        } else if (this.permits === 0) {
          await sleep(windowLeftMs, signal);
          continue;
        }
      }
      const n = Math.min(want, this.permits);
      this.permits -= n;
      return n;
    }
    return 0;
  }

  /** Gives back starts a read did not use; they stay good until their window ends. */
  refund(count: number): void {
    if (count > 0 && this.context.now() < this.validUntil) this.permits += count;
  }

  /** How long (ms) the starts in hand stay good: a parked read must not outlive its window. */
  validForMs(): number {
    return Math.max(1, this.validUntil - this.context.now());
  }

  /**
   * Before `count` read entries start: when the window their starts came from is over, they take
   * starts of the current window (waiting if needed), so no window sees more than its budget.
   */
  async confirm(count: number): Promise<void> {
    if (this.context.now() < this.validUntil) return;
    for (let need = count; need > 0 && !this.context.signal.aborted;) {
      need -= await this.acquire(need);
    }
  }
}

/** `rateLimit: { scope: 'group' }`: the group's budget in Redis, one script call per refill. */
export function groupRateBudget(
  client: Pick<StreamsClient, 'takeRateBudget'>,
  stream: string,
  group: string,
  limit: Pick<RateLimitOptions, 'max' | 'perMs'>,
): RateBudget {
  const takeRateBudget = client.takeRateBudget?.bind(client);
  if (!takeRateBudget) {
    throw new TypeError(
      `rateLimit scope 'group' needs a client with takeRateBudget (${stream}/${group})`,
    );
  }
  return { take: (want) => takeRateBudget(stream, group, limit.max, limit.perMs, want) };
}

/** The limiter of a loop's `rateLimit` option; {@link NO_RATE_LIMIT} when there is none. */
export function rateLimiterFor(
  limit: RateLimitOptions | null,
  client: Pick<StreamsClient, 'takeRateBudget'>,
  stream: string,
  group: string,
  context: RateLimiterContext,
): StartLimiter {
  if (limit === null) return NO_RATE_LIMIT;
  const budget =
    limit.scope === 'group'
      ? groupRateBudget(client, stream, group, limit)
      : new ProcessRateBudget(limit, context.now);
  return new RateLimiter(budget, context);
}
