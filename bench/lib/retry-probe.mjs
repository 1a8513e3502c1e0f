// The retry workload of issue 11 (`BENCH_WORKLOADS=retries`), child side: every `failEvery`-th
// entry fails its first attempt; the second attempt records how late it came against the delay the
// policy planned (start of attempt 2 - failure of attempt 1 - planned delay).

/** The failing drain's policy: exponential from 50 ms (attempt 2 is planned 50 ms after the failure). */
export const RETRY_POLICY = { type: 'exponential', initialMs: 50 };
/** 1 in 10 entries fails once. */
export const FAIL_EVERY = 10;

/** The delay `policy` plans after a failure on attempt 1 (jitter 0). */
export function plannedFirstDelayMs(policy) {
  if (policy.type === 'fixed') return policy.delayMs;
  if (policy.type === 'exponential') return Math.min(policy.maxMs ?? 60_000, policy.initialMs);
  throw new TypeError(`no planned delay for a '${policy.type}' policy`);
}

export class FailOnce {
  /** @param {{ n: number, failEvery: number, policy: object }} cfg */
  constructor({ n, failEvery, policy }) {
    this.failEvery = failEvery;
    this.plannedMs = plannedFirstDelayMs(policy);
    // the failing entries are seq = failEvery - 1, 2 * failEvery - 1, ... (seq 0, the first one
    // handled, starts the clock with a success)
    this.failedAt = new Float64Array(Math.ceil(n / failEvery));
    this.late = new Float64Array(this.failedAt.length);
    this.failed = 0;
    this.retried = 0;
  }

  /** Throws on the first attempt of a failing entry; records the lateness of its second. */
  check(seq, attempts) {
    if ((seq + 1) % this.failEvery !== 0) return;
    const k = (seq + 1) / this.failEvery - 1;
    const now = performance.now();
    if (attempts === 1) {
      this.failedAt[k] = now;
      this.failed++;
      throw new Error('planned failure (bench retry workload)');
    }
    if (attempts === 2 && this.failedAt[k] > 0)
      this.late[this.retried++] = now - this.failedAt[k] - this.plannedMs;
  }

  /** Failures, retries seen, and the lateness (ms): p50, p99, max. */
  result() {
    const late = this.late.subarray(0, this.retried).sort();
    const at = (p) =>
      late[Math.min(late.length - 1, Math.max(0, Math.ceil((p / 100) * late.length) - 1))];
    return {
      failed: this.failed,
      retried: this.retried,
      plannedMs: this.plannedMs,
      lateMs: late.length
        ? { p50: at(50), p99: at(99), max: late[late.length - 1], min: late[0] }
        : null,
    };
  }
}
