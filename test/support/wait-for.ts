/** Polling helpers for tests that wait on real processes and sockets. */
import { inspect } from 'node:util';

/** Options for {@link waitFor}. */
export interface WaitForOptions {
  /** Give up after this long. @default 10000 */
  timeoutMs?: number;
  /** Pause between two calls of `fn`. @default 25 */
  intervalMs?: number;
  /** What is being waited for; leads the timeout error. */
  message?: string;
}

/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Date.now() at the start of a fresh event-loop turn. A timer set later in this turn counts its
 * delay from the loop's cached clock, which is as old as the turn: measured from a clock read
 * deep in a long turn (a loaded CI runner), a 50 ms timer can fire 10 ms "early". A timing test
 * takes its start here, so its lower bound can be the delay less 1 ms of clock grain.
 */
export async function freshClock(): Promise<number> {
  await new Promise((resolve) => setImmediate(resolve));
  return Date.now();
}

/**
 * Calls `fn` until it returns (or resolves to) a truthy value and returns that value. A throw
 * or rejection counts as "not yet". On timeout, throws an Error naming `message`, the time
 * waited and the last value or exception seen.
 */
export async function waitFor<T>(
  fn: () => T | Promise<T>,
  { timeoutMs = 10000, intervalMs = 25, message }: WaitForOptions = {},
): Promise<T> {
  const started = Date.now();
  let last: { kind: 'value'; value: unknown } | { kind: 'error'; error: unknown } | undefined;
  for (;;) {
    try {
      const value = await fn();
      if (value) return value;
      last = { kind: 'value', value };
    } catch (error) {
      last = { kind: 'error', error };
    }
    const elapsed = Date.now() - started;
    if (elapsed >= timeoutMs) {
      const what = message ?? 'condition';
      const seen =
        last === undefined
          ? 'fn was never called'
          : last.kind === 'value'
            ? `last value: ${inspect(last.value, { depth: 4, breakLength: Infinity })}`
            : `last error: ${
                last.error instanceof Error
                  ? (last.error.stack ?? last.error.message)
                  : inspect(last.error)
              }`;
      throw new Error(
        `waitFor timed out after ${elapsed} ms: ${what}; ${seen}`,
        last?.kind === 'error' ? { cause: last.error } : undefined,
      );
    }
    await sleep(Math.min(intervalMs, Math.max(0, timeoutMs - elapsed)));
  }
}
