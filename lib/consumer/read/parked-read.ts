import type { RawEntry } from '../../redis/stream-roles';
import type { BlockingReader } from './blocking-read';
import { unblockWhileParked } from './unblock';

/**
 * The loop's wait for new entries on its {@link BlockingReader}, and the two ways to end it early:
 * a retry coming due, and a stop.
 */
export class ParkedRead {
  private parked = false;
  /** Counts the parks, so a wake-up retried for one never chases the next. */
  private parks = 0;
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
    this.parks++;
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

  /** Ends the read for the stop (the connection may be dropped when UNBLOCK is denied). */
  async wakeForStop(): Promise<void> {
    await unblockWhileParked(
      () => this.parked,
      () => this.reader.interrupt(true),
      40,
      50,
    );
  }

  /**
   * A keyed lane waits for an XACK sent on the connection this read parks: the XACK is answered
   * only after the read, so the read ends now (CLIENT UNBLOCK, retried while this park lasts: it
   * can overtake the read on the wire). Denied (a minimal ACL): the XACK waits for the park.
   */
  async wakeForAck(): Promise<void> {
    const park = this.parks;
    await unblockWhileParked(
      () => this.parked && this.parks === park,
      () => this.reader.interrupt(false),
      10,
      20,
    );
  }

  /**
   * A due retry ends the parked read early with CLIENT UNBLOCK; where that is denied (a minimal
   * ACL) the retry waits for the read's BLOCK timeout instead of dropping a healthy connection.
   */
  private wakeForRetry(): void {
    if (this.parked) this.reader.interrupt(false).catch(() => undefined);
  }
}
