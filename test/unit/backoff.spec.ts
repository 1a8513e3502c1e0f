/** Backoff delays and the abortable sleep (lib/consumer/context/backoff.ts). */
import { jest } from '@jest/globals';
import { BACKOFF_MAX_MS, backoffDelay, sleep } from '../../lib/consumer/context/backoff';

describe('backoffDelay', () => {
  it('100 ms doubling per failure, capped at 30 s, whatever the streak', () => {
    expect([1, 2, 3, 4, 5].map(backoffDelay)).toEqual([100, 200, 400, 800, 1600]);
    expect(backoffDelay(9)).toBe(25_600);
    expect(backoffDelay(10)).toBe(BACKOFF_MAX_MS);
    expect(backoffDelay(10_000)).toBe(BACKOFF_MAX_MS);
    expect(backoffDelay(0)).toBe(100);
  });
});

describe('sleep', () => {
  it('waits ms, or less when the signal aborts; at once when already aborted; never rejects', async () => {
    jest.useFakeTimers();
    try {
      let done = false;
      void sleep(1000).then(() => (done = true));
      await jest.advanceTimersByTimeAsync(999);
      expect(done).toBe(false);
      await jest.advanceTimersByTimeAsync(1);
      expect(done).toBe(true);

      const abort = new AbortController();
      done = false;
      void sleep(60_000, abort.signal).then(() => (done = true));
      await jest.advanceTimersByTimeAsync(10);
      abort.abort();
      await jest.advanceTimersByTimeAsync(0);
      expect(done).toBe(true);
      expect(jest.getTimerCount()).toBe(0); // its timer went with it

      done = false;
      void sleep(60_000, abort.signal).then(() => (done = true));
      await jest.advanceTimersByTimeAsync(0);
      expect(done).toBe(true);
    } finally {
      jest.useRealTimers();
    }
  });
});
