import type { RateLimitOptions } from '../../interfaces/delivery-control.interface';
import type { StreamsClient } from '../../redis/stream-roles';
import { sleep } from '../context';

/**
 * Starts in hand are not handed out in the last ms of their window: a start begins a moment after
 * it is handed out (a held key's lane, a batch), and must begin inside the window it counts in.
 */
const WINDOW_END_SLACK_MS = 3;

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

/** Starts granted at once: how many, and the window they belong to (to give back what was not used). */
export interface Starts {
  readonly count: number;
  /** The window of the starts; a refund counts only within the same window. */
  readonly window: number;
}

/** The starts of a read of new entries ({@link StartLimiter.readStarts}). */
export interface ReadStarts extends Starts {
  /** How long (ms) the read may park: a read holding starts parks no longer than they stay good. */
  readonly parkMs: number;
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
  /** Like {@link acquire}, with the window the starts belong to (for {@link refund}). */
  take(want: number): Promise<Starts>;
  /**
   * Gives back starts a read did not use, taken in `window` ({@link take}): counted only while
   * that window lasts (a start given back in a later window would let that window start more
   * than `max`); without a window nothing is given back (the starts stay spent).
   */
  refund(count: number, window?: number): void;
  /**
   * Before a read of new entries: how many it may read (up to `want`), the window of their
   * starts, and how long it may park ({@link ReadStarts}). A loop of its own takes the starts
   * now and parks no longer than their window; a loop of a shared pool takes none here
   * (pooled-limiter.ts).
   */
  readStarts(want: number): Promise<ReadStarts>;
  /** That read returned `got` entries: the starts it took and did not use go back. */
  readDone(starts: ReadStarts, got: number): void;
  /**
   * True while starts taken in `window` ({@link take}) may still begin: their window lasts (it
   * ends a few ms early). A start counts in the window it begins in, so an entry of a read that
   * waited past its window (for a slot, for its key's XACK) takes a start of the current one first.
   * Always true without a rate limit or without a window.
   */
  holds(window?: number): boolean;
  /**
   * Before `count` read entries start: takes fresh starts when the window their starts came from
   * (`window`, from {@link take}; absent: the current one) is over. Resolves to the window the
   * starts belong to now (for {@link holds}).
   */
  confirm(count: number, window?: number): Promise<number | undefined>;
}

/** The limiter of a handler without `rateLimit`: every read may take a whole batch. */
export const NO_RATE_LIMIT: StartLimiter = Object.freeze({
  limits: false,
  acquire: (want: number) => Promise.resolve(want),
  take: (want: number) => Promise.resolve({ count: want, window: 0 }),
  refund: () => undefined,
  readStarts: (want: number) => Promise.resolve({ count: want, window: 0, parkMs: Infinity }),
  readDone: () => undefined,
  holds: () => true,
  confirm: (_count: number, window?: number) => Promise.resolve(window),
});

/**
 * One start of the current window for an entry about to begin outside the starts of its read (a
 * held key's lane, or an entry whose read's window ended: a start counts in the window it begins
 * in). `mayBegin` is asked once the start is in hand (the wait may have outlasted the reason to
 * begin); when it says no, the start is given back. Resolves false when the entry must not begin:
 * the limiter stopped (no start) or `mayBegin` said no.
 */
export async function takeOneStart(
  limiter: Pick<StartLimiter, 'take' | 'refund'>,
  mayBegin: () => boolean,
): Promise<boolean> {
  const taken = await limiter.take(1);
  if (taken.count === 0) return false;
  if (mayBegin()) return true;
  limiter.refund(1, taken.window);
  return false;
}

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
  /** Which window the starts in hand belong to (it grows with every new window's refill). */
  private window = 0;
  /** Loops waiting for starts: a refund wakes them. */
  private readonly waiting: Array<() => void> = [];

  constructor(
    private readonly budget: RateBudget,
    private readonly context: RateLimiterContext,
  ) {}

  /**
   * How many entries the loop may read (and start) now, up to `want`; waits for the next window
   * when the budget is spent. At least 1, or 0 once the loop stops.
   */
  async acquire(want: number, signal: AbortSignal = this.context.signal): Promise<number> {
    return (await this.take(want, signal)).count;
  }

  /** {@link acquire}, with the window the starts belong to (for {@link refund}). */
  async take(want: number, signal: AbortSignal = this.context.signal): Promise<Starts> {
    const { now } = this.context;
    while (!signal.aborted) {
      if (now() >= this.validUntil - WINDOW_END_SLACK_MS) this.permits = 0;
      if (this.permits < want) {
        // top up in one refill; what is in hand goes out even when the budget is spent
        const { granted, windowLeftMs } = await this.budget.take(want - this.permits);
        if (granted > 0) {
          const endsAt = now() + windowLeftMs;
          // a refill of the window in hand keeps its number (the starts a read took from it stay
          // good, and its refunds count); the budget's next window begins a new one
          if (
            now() >= this.validUntil - WINDOW_END_SLACK_MS ||
            endsAt > this.validUntil + WINDOW_END_SLACK_MS
          ) {
            this.permits = 0;
            this.validUntil = endsAt;
            this.window++;
          }
          this.permits += granted;
        } else if (this.permits === 0) {
          await this.waitForStarts(windowLeftMs, signal);
          continue;
        }
      }
      const count = Math.min(want, this.permits);
      this.permits -= count;
      return { count, window: this.window };
    }
    return { count: 0, window: this.window };
  }

  /**
   * Gives back starts a read did not use; they stay good until their window ends, and a loop
   * waiting for starts (of the loops sharing this limiter) takes them at once.
   */
  refund(count: number, window?: number): void {
    if (count <= 0 || window !== this.window || this.context.now() >= this.validUntil) return;
    this.permits += count;
    for (const wake of this.waiting.splice(0)) wake();
  }

  /** Until the window ends (`ms`), the stop, or a refund puts starts back in the pool. */
  private waitForStarts(ms: number, signal: AbortSignal): Promise<void> {
    // the stop may have come while the budget was asked (its listener would never fire)
    if (signal.aborted) return Promise.resolve();
    // a refund ends the sleep too: no timer of a finished wait keeps the process up
    const ended = new AbortController();
    const stop = (): void => ended.abort();
    signal.addEventListener('abort', stop, { once: true });
    this.waiting.push(stop);
    return sleep(ms, ended.signal).finally(() => {
      signal.removeEventListener('abort', stop);
      const at = this.waiting.indexOf(stop);
      if (at >= 0) this.waiting.splice(at, 1);
    });
  }

  /** {@link StartLimiter.readStarts}: the starts now; the read parks no longer than they last. */
  async readStarts(want: number, signal: AbortSignal = this.context.signal): Promise<ReadStarts> {
    const starts = await this.take(want, signal);
    return { ...starts, parkMs: this.validForMs() };
  }

  /** {@link StartLimiter.readDone}: what the read did not use goes back. */
  readDone(starts: ReadStarts, got: number): void {
    this.refund(starts.count - got, starts.window);
  }

  /** How long (ms) the starts in hand stay good: a parked read must not outlive its window. */
  validForMs(): number {
    return Math.max(1, this.validUntil - this.context.now());
  }

  /** True while starts taken in `window` may still begin ({@link StartLimiter.holds}). */
  holds(window?: number): boolean {
    if (window === undefined) return true;
    return window === this.window && this.context.now() < this.validUntil - WINDOW_END_SLACK_MS;
  }

  /**
   * Before `count` read entries start: when the window their starts came from is over, they take
   * starts of the current window (waiting if needed), so no window sees more than its budget.
   */
  async confirm(
    count: number,
    window: number = this.window,
    signal: AbortSignal = this.context.signal,
  ): Promise<number> {
    // starts of the window in hand stay good until it ends; those of an earlier window (another
    // loop or a held key's lane began a new one meanwhile) do not count in this one
    if (this.holds(window)) return window;
    for (let need = count; need > 0 && !signal.aborted;) {
      need -= await this.acquire(need, signal);
    }
    return this.window;
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

/**
 * The limiter of a handler's `rateLimit` option; {@link NO_RATE_LIMIT} when there is none. With
 * `scope: 'group'` the budget in Redis is the one of `stream` and `group` (a partitioned handler
 * passes its stream's own name: one budget for every partition).
 */
export function rateLimiterFor(
  limit: RateLimitOptions,
  client: Pick<StreamsClient, 'takeRateBudget'>,
  stream: string,
  group: string,
  context: RateLimiterContext,
): RateLimiter;
export function rateLimiterFor(
  limit: RateLimitOptions | null,
  client: Pick<StreamsClient, 'takeRateBudget'>,
  stream: string,
  group: string,
  context: RateLimiterContext,
): StartLimiter;
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
