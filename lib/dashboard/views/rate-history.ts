/** Samples kept per group for the sparkline: with one sample a second, the last minute. */
const SAMPLES = 60;
/** Overview calls closer together than this add no sample (several open pages, one history). */
const MIN_SAMPLE_GAP_MS = 900;

/** The in/out rates of one group over time, oldest first. */
export interface RateSeries {
  tpsIn: number[];
  tpsOut: number[];
}

/** The recent in/out rates of each group of this app's loops, for the overview's sparklines. */
export class RateHistory {
  private readonly series = new Map<string, RateSeries & { at: number }>();
  private readonly counters = new Map<string, { value: number; at: number; rate: number | null }>();

  /**
   * The per-second rate of a counter that only grows (`entries-added`, `entries-read`) between
   * the previous reading at least a second ago and this one; `null` on the first reading, when
   * the counter is unknown, or when it went back (the key was recreated).
   */
  rateOf(key: string, value: number | null, now: number): number | null {
    if (value === null) return null;
    const last = this.counters.get(key);
    if (!last || value < last.value) {
      this.counters.set(key, { value, at: now, rate: null });
      return null;
    }
    if (now - last.at < MIN_SAMPLE_GAP_MS) return last.rate;
    const rate = Math.round(((value - last.value) * 10_000) / (now - last.at)) / 10;
    this.counters.set(key, { value, at: now, rate });
    return rate;
  }

  /** Adds a sample for `stream`/`group` (unless one was taken just now) and returns the series. */
  record(stream: string, group: string, tpsIn: number, tpsOut: number, now: number): RateSeries {
    const key = `${stream}\u0000${group}`;
    let series = this.series.get(key);
    if (!series) {
      series = { tpsIn: [], tpsOut: [], at: 0 };
      this.series.set(key, series);
    }
    if (now - series.at >= MIN_SAMPLE_GAP_MS) {
      series.at = now;
      series.tpsIn.push(tpsIn);
      series.tpsOut.push(tpsOut);
      if (series.tpsIn.length > SAMPLES) series.tpsIn.shift();
      if (series.tpsOut.length > SAMPLES) series.tpsOut.shift();
    }
    return { tpsIn: [...series.tpsIn], tpsOut: [...series.tpsOut] };
  }
}
