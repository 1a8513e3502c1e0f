import type { RawEntry } from '../redis/stream-roles';
import { sleep } from './backoff';
import type { BlockingReader } from './blocking-read';

/**
 * The loop's wait for new entries on its {@link BlockingReader}, and the two ways to end it early:
 * a retry coming due, and a stop.
 */
export class ParkedRead {
  private parked = false;
  private retryWake: NodeJS.Timeout | undefined;

  constructor(private readonly reader: BlockingReader) {}

  /**
   * Parks a read of up to `count` new entries for at most `waitMs` (no single server-side park
   * longer than `parkMs`). Redis ends a BLOCK on its own clock tick (up to 100 ms late at hz 10):
   * a retry coming due within the wait (`retryDueInMs`) wakes it on time with CLIENT UNBLOCK
   * instead. Call {@link end} once the read and what went with it settled.
   */
  read(count: number, waitMs: number, parkMs: number, retryDueInMs: number): Promise<RawEntry[]> {
    this.parked = true;
    const read = this.reader.read(count, waitMs, parkMs);
    if (retryDueInMs <= waitMs)
      this.retryWake = setTimeout(() => this.wakeForRetry(), retryDueInMs);
    return read;
  }

  /** The read is over: no wake-up for it any more. */
  end(): void {
    clearTimeout(this.retryWake);
    this.retryWake = undefined;
    this.parked = false;
  }

  /** CLIENT UNBLOCK can overtake the read it targets on the wire: retry until the read returns. */
  async wakeForStop(): Promise<void> {
    for (let tries = 0; this.parked && tries < 40; tries++) {
      await this.reader.interrupt(true).catch(() => undefined);
      await sleep(50);
    }
  }

  /**
   * A due retry ends the parked read early with CLIENT UNBLOCK; where that is denied (a minimal
   * ACL) the retry waits for the read's BLOCK timeout instead of dropping a healthy connection.
   */
  private wakeForRetry(): void {
    if (this.parked) this.reader.interrupt(false).catch(() => undefined);
  }
}
