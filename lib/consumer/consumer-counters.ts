import type { ConsumerSnapshot, ConsumerState } from '../interfaces/consumer-snapshot.interface';
import { RateTracker } from './rate-tracker';

/** The figures one loop keeps about itself; O(1) per update. `ConsumerStats` only reads them. */
export class ConsumerCounters {
  state: ConsumerState = 'starting';
  totalRead = 0;
  totalAcked = 0;
  totalDlq = 0;
  totalErrors = 0;
  totalDeleted = 0;
  /** Failed entries waiting for their retry now (kept by the retry scheduler). */
  retrying = 0;
  totalRetries = 0;
  lastError: string | null = null;
  readonly tpsIn: RateTracker;
  readonly tpsOut: RateTracker;

  constructor(
    private readonly identity: Pick<ConsumerSnapshot, 'stream' | 'group' | 'consumer' | 'handler'>,
    now: () => number = Date.now,
  ) {
    this.tpsIn = new RateTracker(10, now);
    this.tpsOut = new RateTracker(10, now);
  }

  read(count: number): void {
    this.totalRead += count;
    this.tpsIn.add(count);
  }

  acked(count: number): void {
    this.totalAcked += count;
    this.tpsOut.add(count);
  }

  /** A plain copy for callers. */
  snapshot(): ConsumerSnapshot {
    return {
      ...this.identity,
      state: this.state,
      totalRead: this.totalRead,
      totalAcked: this.totalAcked,
      totalDlq: this.totalDlq,
      totalErrors: this.totalErrors,
      totalDeleted: this.totalDeleted,
      retrying: this.retrying,
      totalRetries: this.totalRetries,
      tpsIn: this.tpsIn.rate(),
      tpsOut: this.tpsOut.rate(),
      lastError: this.lastError,
    };
  }
}
