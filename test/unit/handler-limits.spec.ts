/**
 * A handler's limits shared by its loops (lib/consumer/limits/handler-limits.ts, the partition loops of a
 * partitioned handler): one pool of `concurrency` slots and one pool of rate-limit starts, each
 * loop's waits ended by its own stop, and a loop waiting for starts woken by another's refund.
 */
import { handlerLimits } from '../../lib/consumer/limits/handler-limits';
import { NO_STARTS_WINDOW } from '../../lib/consumer/limits/pooled-limiter';
import { NO_RATE_LIMIT } from '../../lib/consumer/limits/rate-limiter';

const noBudget = { takeRateBudget: undefined };
/** A clock that stands at the start of a 60 s window: no window ends during a test. */
const windowStart = (): number => 100 * 60_000;

describe('handlerLimits', () => {
  it('without rateLimit every loop gets the no-limit limiter; one slot pool for all loops', () => {
    const handler = new AbortController();
    const limits = handlerLimits({ concurrency: 2, rateLimit: null }, noBudget, 's', 'g', {
      signal: handler.signal,
      now: Date.now,
    });
    expect(limits.limiterFor(new AbortController().signal)).toBe(NO_RATE_LIMIT);
    // two loops take the two slots; a third call waits until one is given back
    expect(limits.slots.take()).toBeNull();
    expect(limits.slots.take()).toBeNull();
    const third = limits.slots.take();
    expect(third).not.toBeNull();
    expect(limits.slots.inUse).toBe(2);
  });

  it('the loops share one pool of starts: what one takes the other cannot, what one refunds the other gets', async () => {
    const handler = new AbortController();
    const limits = handlerLimits(
      { concurrency: 8, rateLimit: { max: 5, perMs: 60_000, scope: 'process' } },
      noBudget,
      's',
      'g',
      { signal: handler.signal, now: windowStart },
    );
    const loopA = new AbortController();
    const loopB = new AbortController();
    const a = limits.limiterFor(loopA.signal);
    const b = limits.limiterFor(loopB.signal);
    const taken = await a.take(100);
    expect(taken.count).toBe(5); // the whole window's budget
    let bGot: number | undefined;
    const waiting = b.acquire(10).then((n) => (bGot = n));
    await new Promise((r) => setTimeout(r, 20));
    expect(bGot).toBeUndefined(); // nothing left in this window (60 s long)
    a.refund(3, taken.window); // A's read got 2 of its 5
    await waiting;
    expect(bGot).toBe(3); // B took the refund at once, not at the window's end
  });

  it("a loop's read of new entries holds no starts: an empty partition keeps none from the others", async () => {
    const handler = new AbortController();
    const limits = handlerLimits(
      { concurrency: 8, rateLimit: { max: 5, perMs: 60_000, scope: 'process' } },
      noBudget,
      's',
      'g',
      { signal: handler.signal, now: windowStart },
    );
    const idle = limits.limiterFor(new AbortController().signal);
    const busy = limits.limiterFor(new AbortController().signal);
    // the idle loop's read: one window's worth at most, no starts taken, parked as long as it likes
    const read = await idle.readStarts(100);
    expect(read).toEqual({ count: 5, window: NO_STARTS_WINDOW, parkMs: Infinity });
    idle.readDone(read, 0);
    // its entries, had it got any, hold in no window: each takes its start as it begins
    expect(idle.holds(read.window)).toBe(false);
    await expect(idle.confirm(3, read.window)).resolves.toBe(NO_STARTS_WINDOW);
    // every start of the window is still there for the loop whose partition has entries
    expect((await busy.take(100)).count).toBe(5);
  });

  it("a loop's stop ends its wait, not the other loops'", async () => {
    const handler = new AbortController();
    const limits = handlerLimits(
      { concurrency: 1, rateLimit: { max: 1, perMs: 60_000, scope: 'process' } },
      noBudget,
      's',
      'g',
      { signal: handler.signal, now: windowStart },
    );
    const loopA = new AbortController();
    const loopB = new AbortController();
    const a = limits.limiterFor(loopA.signal);
    const b = limits.limiterFor(loopB.signal);
    expect(await a.acquire(1)).toBe(1);
    let bGot: number | undefined;
    void b.acquire(1).then((n) => (bGot = n));
    const stopped = a.acquire(1);
    loopA.abort();
    expect(await stopped).toBe(0); // A stopped: it gets nothing and waits no more
    await new Promise((r) => setTimeout(r, 20));
    expect(bGot).toBeUndefined(); // B still waits for the window
    loopB.abort();
  });
});
