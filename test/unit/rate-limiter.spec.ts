/** The rate limiter against a fake clock: what a loop may read, refunds, windows, stop. */
import {
  NO_RATE_LIMIT,
  ProcessRateBudget,
  RateLimiter,
  rateLimiterFor,
  type RateBudget,
  type RateGrant,
} from '../../lib/consumer/limits/rate-limiter';

function clock(start = 10_000) {
  let now = start;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

describe('ProcessRateBudget', () => {
  it('grants at most max per fixed window of perMs and says when the window ends', async () => {
    const c = clock(10_000);
    const budget = new ProcessRateBudget({ max: 5, perMs: 1000 }, c.now);
    expect(await budget.take(3)).toEqual({ granted: 3, windowLeftMs: 1000 });
    c.advance(400);
    expect(await budget.take(3)).toEqual({ granted: 2, windowLeftMs: 600 });
    expect(await budget.take(3)).toEqual({ granted: 0, windowLeftMs: 600 });
    c.advance(600);
    expect(await budget.take(10)).toEqual({ granted: 5, windowLeftMs: 1000 });
  });
});

describe('RateLimiter', () => {
  /** A budget that records its calls, over a ProcessRateBudget. */
  function recorded(max: number, perMs: number, c: ReturnType<typeof clock>) {
    const inner = new ProcessRateBudget({ max, perMs }, c.now);
    const calls: number[] = [];
    const budget: RateBudget = {
      take: (want: number): Promise<RateGrant> => {
        calls.push(want);
        return inner.take(want);
      },
    };
    return { budget, calls };
  }

  it('lets a loop read no more than it may start, one budget call per refill, not per entry', async () => {
    const c = clock();
    const { budget, calls } = recorded(10, 1000, c);
    const limiter = new RateLimiter(budget, { signal: new AbortController().signal, now: c.now });
    const first = await limiter.take(4);
    expect(first.count).toBe(4);
    limiter.refund(1, first.window); // the read returned 3
    const second = await limiter.take(100);
    expect(second.count).toBe(7); // 10 - 3 used
    expect(calls).toEqual([4, 99]); // one refill tops up what was in hand
    // the refund of a read that got nothing is kept for the next one: no budget call
    limiter.refund(7, second.window);
    expect(await limiter.acquire(5)).toBe(5);
    expect(calls).toEqual([4, 99]);
  });

  it('waits for the next window when the budget is spent (real clock), and no longer', async () => {
    const budget = new ProcessRateBudget({ max: 2, perMs: 200 }, Date.now);
    const limiter = new RateLimiter(budget, {
      signal: new AbortController().signal,
      now: Date.now,
    });
    const started = Date.now();
    const windows = new Set<number>();
    let total = 0;
    while (total < 6) {
      total += await limiter.acquire(10);
      windows.add(Math.floor(Date.now() / 200));
    }
    expect(total).toBe(6);
    expect(windows.size).toBe(3); // 2 starts in each of 3 windows
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('drops starts whose window ended; a batch that starts late takes fresh ones (confirm)', async () => {
    const c = clock(10_000);
    const { budget, calls } = recorded(10, 1000, c);
    const limiter = new RateLimiter(budget, { signal: new AbortController().signal, now: c.now });
    expect(await limiter.acquire(4)).toBe(4);
    expect(limiter.validForMs()).toBe(1000);
    await limiter.confirm(4); // same window: nothing to do
    expect(calls).toEqual([4]);
    c.advance(1000);
    await limiter.confirm(4); // next window: the 4 starts are taken again from it
    expect(calls).toEqual([4, 4]);
    limiter.refund(3);
    c.advance(1000);
    expect(await limiter.acquire(10)).toBe(10); // the refund expired with its window
    expect(calls).toEqual([4, 4, 10]);
  });

  it('returns 0 at once when the loop stops, also in the middle of a wait', async () => {
    const abort = new AbortController();
    const spent: RateBudget = { take: async () => ({ granted: 0, windowLeftMs: 60_000 }) };
    const limiter = new RateLimiter(spent, { signal: abort.signal, now: Date.now });
    const waiting = limiter.acquire(5);
    setTimeout(() => abort.abort(), 20);
    const started = Date.now();
    expect(await waiting).toBe(0);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(await limiter.acquire(5)).toBe(0);
  });
});

describe('NO_RATE_LIMIT', () => {
  it('a handler without rateLimit: every read may take its whole batch, nothing waits', async () => {
    expect(NO_RATE_LIMIT.limits).toBe(false);
    expect(await NO_RATE_LIMIT.acquire(100)).toBe(100);
    NO_RATE_LIMIT.refund(100);
    expect(await NO_RATE_LIMIT.acquire(7)).toBe(7);
    expect(await NO_RATE_LIMIT.readStarts(7)).toEqual({ count: 7, window: 0, parkMs: Infinity });
    await expect(NO_RATE_LIMIT.confirm(100)).resolves.toBeUndefined();
  });

  it('rateLimiterFor gives it to a loop with rateLimit null, a limiter that limits otherwise', () => {
    const context = { signal: new AbortController().signal, now: () => 0 };
    expect(rateLimiterFor(null, {}, 's', 'g', context)).toBe(NO_RATE_LIMIT);
    const limited = rateLimiterFor(
      { max: 5, perMs: 1000, scope: 'process' },
      {},
      's',
      'g',
      context,
    );
    expect(limited.limits).toBe(true);
  });
});

describe('RateLimiter refunds and windows', () => {
  it('a refund counts only in the window its starts came from: starts of an earlier window never add to the current one', async () => {
    const c = clock(10_000);
    const stop = new AbortController();
    const limiter = new RateLimiter(new ProcessRateBudget({ max: 4, perMs: 1000 }, c.now), {
      signal: stop.signal,
      now: c.now,
    });
    // a read takes all 4 starts of window 1 and is still out when the window ends
    const read = await limiter.take(4);
    expect(read.count).toBe(4);
    c.advance(1000);
    // window 2: a held key's lane takes one start, then the old read comes back with nothing
    const lane = await limiter.take(1);
    expect(lane.count).toBe(1);
    expect(lane.window).not.toBe(read.window);
    limiter.refund(4, read.window);
    // window 2 has 3 starts left, not 3 + 4
    expect((await limiter.take(10)).count).toBe(3);
    c.advance(0);
    // a refund without its window gives nothing back (the starts stay spent)
    limiter.refund(2);
    const after = await Promise.race([
      limiter.take(1),
      new Promise<'waits'>((r) => setTimeout(() => r('waits'), 30)),
    ]);
    expect(after).toBe('waits');
    stop.abort(); // the clock stands still: the take would wait for ever
  });

  it('a refund within its window is counted', async () => {
    const c = clock(10_000);
    const limiter = new RateLimiter(new ProcessRateBudget({ max: 4, perMs: 1000 }, c.now), {
      signal: new AbortController().signal,
      now: c.now,
    });
    const read = await limiter.take(4);
    limiter.refund(3, read.window);
    expect((await limiter.take(10)).count).toBe(3);
  });
});

describe('RateLimiter.confirm with the window of the starts', () => {
  it('a batch whose starts are of an earlier window takes fresh starts, even when another taker began the new window', async () => {
    const c = clock(10_000);
    const stop = new AbortController();
    const limiter = new RateLimiter(new ProcessRateBudget({ max: 4, perMs: 1000 }, c.now), {
      signal: stop.signal,
      now: c.now,
    });
    const batch = await limiter.take(3); // window 1: a read of 3 entries
    c.advance(1000);
    // window 2 begins with a held key's lane taking one start
    expect((await limiter.take(1)).count).toBe(1);
    // the batch starts now: its 3 starts of window 1 do not count in window 2; it takes 3 more
    await limiter.confirm(3, batch.window);
    // window 2 has given 1 + 3 = 4: nothing left
    const next = await Promise.race([
      limiter.take(1),
      new Promise<'waits'>((r) => setTimeout(() => r('waits'), 30)),
    ]);
    expect(next).toBe('waits');
    stop.abort(); // the clock stands still: the take would wait for ever
  });

  it("another taker's refill in the same window keeps its number: a read's starts stay good and its refunds count", async () => {
    const c = clock(10_000);
    const { budget, calls } = (() => {
      const inner = new ProcessRateBudget({ max: 6, perMs: 1000 }, c.now);
      const list: number[] = [];
      return {
        calls: list,
        budget: { take: (want: number) => (list.push(want), inner.take(want)) },
      };
    })();
    const limiter = new RateLimiter(budget, { signal: new AbortController().signal, now: c.now });
    const read = await limiter.take(3);
    c.advance(100);
    // a held key's lane empties the hand and refills from the same window of the budget
    const lane = await limiter.take(1);
    expect(lane.window).toBe(read.window);
    expect(limiter.holds(read.window)).toBe(true);
    // the read's batch starts now: its starts hold, nothing more is taken from the budget
    expect(await limiter.confirm(3, read.window)).toBe(read.window);
    expect(calls).toEqual([3, 1]);
    // the read returned 1 entry: 2 given back count in this window (6 - 3 - 1 + 2 = 4 left)
    limiter.refund(2, read.window);
    expect((await limiter.take(10)).count).toBe(4);
  });

  it('holds(window): starts of a window may begin until its last ms, not after; confirm tells the window they belong to then', async () => {
    const c = clock(10_000);
    const limiter = new RateLimiter(new ProcessRateBudget({ max: 4, perMs: 1000 }, c.now), {
      signal: new AbortController().signal,
      now: c.now,
    });
    const read = await limiter.take(2);
    expect(limiter.holds(read.window)).toBe(true);
    expect(limiter.holds(undefined)).toBe(true);
    c.advance(995);
    expect(limiter.holds(read.window)).toBe(true);
    c.advance(3); // 2 ms before the window's end: too late to begin a start of it
    expect(limiter.holds(read.window)).toBe(false);
    c.advance(10);
    expect(limiter.holds(read.window)).toBe(false);
    const now = await limiter.confirm(2, read.window);
    expect(now).not.toBe(read.window);
    expect(limiter.holds(now)).toBe(true);
    expect(NO_RATE_LIMIT.holds(7)).toBe(true);
  });
});
