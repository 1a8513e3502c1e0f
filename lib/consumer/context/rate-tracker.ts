/**
 * Events per second over a sliding window, in fixed one-second buckets: O(1) per `add`, no
 * allocation after construction.
 */
export class RateTracker {
  private readonly buckets: Float64Array;
  private readonly stamps: Float64Array;

  constructor(
    private readonly windowSeconds = 10,
    private readonly now: () => number = Date.now,
  ) {
    this.buckets = new Float64Array(windowSeconds);
    this.stamps = new Float64Array(windowSeconds).fill(-1);
  }

  /** Records `count` events now. */
  add(count: number): void {
    const second = Math.floor(this.now() / 1000);
    const slot = second % this.windowSeconds;
    if (this.stamps[slot] !== second) {
      this.stamps[slot] = second;
      this.buckets[slot] = 0;
    }
    this.buckets[slot] += count;
  }

  /** Events per second over the last `windowSeconds` (the current second included). */
  rate(): number {
    const second = Math.floor(this.now() / 1000);
    let sum = 0;
    for (let i = 0; i < this.windowSeconds; i++) {
      if (this.stamps[i] > second - this.windowSeconds) sum += this.buckets[i];
    }
    return sum / this.windowSeconds;
  }
}
