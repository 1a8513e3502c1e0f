/** First wait after a Redis error (ms). */
export const BACKOFF_INITIAL_MS = 100;
/** Longest wait between retries (ms). */
export const BACKOFF_MAX_MS = 30_000;

/** Wait before retry number `streak` (1 on the first failure): 100 ms doubling, capped at 30 s. */
export function backoffDelay(streak: number): number {
  const exponent = Math.max(0, Math.min(streak - 1, 20));
  return Math.min(BACKOFF_INITIAL_MS * 2 ** exponent, BACKOFF_MAX_MS);
}

/** Sleeps `ms`, or less when `signal` aborts first. Never rejects. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
