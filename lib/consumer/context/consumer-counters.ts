import type { ConsumerSnapshot, ConsumerState } from '../../interfaces/consumer-snapshot.interface';
import type { LoopCounters } from './loop-context';
import { RateTracker } from './rate-tracker';

/**
 * The figures one loop keeps about itself; O(1) per update. The loop's collaborators write them
 * through these methods only; `ConsumerStats` reads {@link snapshot}.
 */
export class ConsumerCounters implements LoopCounters {
  private state: ConsumerState = 'starting';
  private totalRead = 0;
  private totalAcked = 0;
  private totalDlq = 0;
  private totalErrors = 0;
  private totalDeleted = 0;
  private totalDuplicates = 0;
  private totalStale = 0;
  private totalFenced = 0;
  /** Failed entries waiting for their retry now (kept by the retry scheduler). */
  private retrying = 0;
  /** The same, of held keys (kept by a partition loop's `HeldKeys`). */
  private heldRetrying = 0;
  private totalRetries = 0;
  private lastError: string | null = null;
  private readonly tpsIn: RateTracker;
  private readonly tpsOut: RateTracker;

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

  deleted(count: number): void {
    this.totalDeleted += count;
  }

  skipped(reason: 'duplicate' | 'stale', count: number): void {
    if (reason === 'duplicate') this.totalDuplicates += count;
    else this.totalStale += count;
  }

  fenced(count: number): void {
    this.totalFenced += count;
  }

  deadLettered(count: number): void {
    this.totalDlq += count;
  }

  handlerFailed(errorText: string): void {
    this.totalErrors++;
    this.lastError = errorText;
  }

  errorSeen(errorText: string): void {
    this.lastError = errorText;
  }

  retryScheduled(): void {
    this.totalRetries++;
  }

  retriesWaiting(count: number): void {
    this.retrying = count;
  }

  heldRetriesWaiting(count: number): void {
    this.heldRetrying = count;
  }

  setState(state: ConsumerState): void {
    this.state = state;
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
      totalDuplicates: this.totalDuplicates,
      totalStale: this.totalStale,
      totalFenced: this.totalFenced,
      retrying: this.retrying + this.heldRetrying,
      totalRetries: this.totalRetries,
      tpsIn: this.tpsIn.rate(),
      tpsOut: this.tpsOut.rate(),
      lastError: this.lastError,
    };
  }
}
